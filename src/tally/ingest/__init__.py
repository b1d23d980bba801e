"""The ingest pipeline: validation, size names, size schemas, deduplication, projection fold, dead letters.

``IngestPipeline.ingest`` is the one entry point: the events route, the
collector's in-process sender and the reconciliation (source
``reconciliation``) all go through it, so every event is checked the same way.
"""

from ._counted import keep_current_resources_fresh as keep_current_resources_fresh
from ._pipeline import BatchTooLarge as BatchTooLarge
from ._pipeline import IngestPipeline as IngestPipeline
from ._pipeline import IngestScope as IngestScope
from ._schemas import SizeSchemaInvalid as SizeSchemaInvalid
from ._schemas import compile_size_schema as compile_size_schema

__all__ = [
    "BatchTooLarge",
    "IngestPipeline",
    "IngestScope",
    "SizeSchemaInvalid",
    "compile_size_schema",
    "keep_current_resources_fresh",
]
