"""The sync framework: run lifecycle, diff, deferral, missed-delete passes, dating, lock use, stats.

A run observes a cloud through an adapter (``tally.openstack``), diffs the
observation against the projection by key, and books the difference as
synthetic events through the ordinary ingest pipeline. The rules are pure
functions in ``_rules``; ``_run.run_sync`` is the lifecycle around them, and ``SyncService`` runs
it. This facade exports what other packages import; the tests take the rules from
``tally.reconcile.rules`` and the seams they drive from ``tally.reconcile.internals``.
"""

from ._adapter import AccountCheck as AccountCheck
from ._adapter import ObserveRequest as ObserveRequest
from ._adapter import Progress as Progress
from ._adapter import adapter_class as adapter_class
from ._adapter import validate_adapter_config as validate_adapter_config
from ._booking import IngestsEvents as IngestsEvents
from ._context import RunSettings as RunSettings
from ._errors import RunAborted as RunAborted
from ._errors import SizeNamesFailed as SizeNamesFailed
from ._model import DeletedResource as DeletedResource
from ._model import Observation as Observation
from ._model import ObservedResource as ObservedResource
from ._model import SizeNameEntry as SizeNameEntry
from ._model import Status as Status
from ._runner import RunnerOutcome as RunnerOutcome
from ._runner import RunRequests as RunRequests
from ._runner import SchedulerRunner as SchedulerRunner
from ._runner import SyncAlreadyRunning as SyncAlreadyRunning
from ._runner import SyncNotStarted as SyncNotStarted
from ._runner import UnknownCloud as UnknownCloud
from ._runner import run_requests as run_requests
from ._scheduler import run_cloud_scheduler as run_cloud_scheduler
from ._service import SyncService as SyncService

__all__ = [
    "AccountCheck",
    "DeletedResource",
    "IngestsEvents",
    "Observation",
    "ObserveRequest",
    "ObservedResource",
    "Progress",
    "RunAborted",
    "RunRequests",
    "RunSettings",
    "RunnerOutcome",
    "SchedulerRunner",
    "SizeNameEntry",
    "SizeNamesFailed",
    "Status",
    "SyncAlreadyRunning",
    "SyncNotStarted",
    "SyncService",
    "UnknownCloud",
    "adapter_class",
    "run_cloud_scheduler",
    "run_requests",
    "validate_adapter_config",
]
