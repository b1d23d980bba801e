"""The composition root: the one place that builds the parts a process runs from its settings.

The ingest pipeline over a store, the sync service of the configured clouds, the collector and the
sink it delivers into are built here and nowhere else (``tests/architecture/test_composition.py``):
``tally run``'s actor tree (``tally.daemon``), ``tally collector``, ``tally sync`` (``tally.cli``),
``tally simulate`` (``tally.simulator``) and the benches all ask this package for them, so a choice
(which sink, which pipeline settings, how many sync slots) is made once.

Each builder imports the package it builds from when called: a process loads the code of the parts it
runs only (a collector posting over HTTP never loads the store's, a daemon without clouds never loads
the reconciliation's).
"""

from ._parts import collector as collector
from ._parts import ingest_pipeline as ingest_pipeline
from ._parts import ingest_sink as ingest_sink
from ._parts import pipeline_of as pipeline_of
from ._parts import sync_service as sync_service
from ._parts import sync_service_of as sync_service_of
from ._processes import open_standalone_sink as open_standalone_sink
from ._processes import open_sync_service as open_sync_service
from ._sinks import http_sink_problem as http_sink_problem
from ._sinks import open_sink as open_sink

__all__ = [
    "collector",
    "http_sink_problem",
    "ingest_pipeline",
    "ingest_sink",
    "open_sink",
    "open_standalone_sink",
    "open_sync_service",
    "pipeline_of",
    "sync_service",
    "sync_service_of",
]
