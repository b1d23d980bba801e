"""The ingest pipeline: validation, size names, size schemas, deduplication, projection fold, dead letters.

``IngestPipeline.ingest`` is the one entry point: the events route, the
collector's in-process sender and the reconciliation (source
``reconciliation``) all go through it, so every event is checked the same way.
"""

from ._counted import keep_current_resources_fresh as keep_current_resources_fresh
from ._counted import refresh_current_resources as refresh_current_resources
from ._pipeline import MAX_BATCH as MAX_BATCH
from ._pipeline import MAX_EVENT_BYTES as MAX_EVENT_BYTES
from ._pipeline import MAX_RAW_BYTES as MAX_RAW_BYTES
from ._pipeline import SCOPE_VIOLATION as SCOPE_VIOLATION
from ._pipeline import BatchTooLarge as BatchTooLarge
from ._pipeline import IngestPipeline as IngestPipeline
from ._pipeline import IngestResult as IngestResult
from ._pipeline import IngestScope as IngestScope
from ._pipeline import Rejection as Rejection
from ._schemas import SizeSchemaInvalid as SizeSchemaInvalid
from ._schemas import compile_size_schema as compile_size_schema

__all__ = [
    "MAX_BATCH",
    "MAX_EVENT_BYTES",
    "MAX_RAW_BYTES",
    "SCOPE_VIOLATION",
    "BatchTooLarge",
    "IngestPipeline",
    "IngestResult",
    "IngestScope",
    "Rejection",
    "SizeSchemaInvalid",
    "compile_size_schema",
    "keep_current_resources_fresh",
    "refresh_current_resources",
]
