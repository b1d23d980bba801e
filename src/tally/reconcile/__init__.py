"""The sync framework: run lifecycle, diff, deferral, missed-delete passes, dating, lock use, stats.

A run observes a cloud through an adapter (``tally.openstack``), diffs the
observation against the projection by key, and books the difference as
synthetic events through the ordinary ingest pipeline. The rules are pure
functions in ``_rules``; ``run_sync`` is the lifecycle around them.
"""

from ._adapter import ADAPTERS as ADAPTERS
from ._adapter import AccountCheck as AccountCheck
from ._adapter import Adapter as Adapter
from ._adapter import ObserveRequest as ObserveRequest
from ._adapter import Progress as Progress
from ._adapter import adapter_class as adapter_class
from ._adapter import check_adapter_environments as check_adapter_environments
from ._adapter import validate_adapter_config as validate_adapter_config
from ._booking import BATCH_SIZE as BATCH_SIZE
from ._booking import event_of as event_of
from ._booking import provider_of as provider_of
from ._diff import diff as diff
from ._errors import RunAborted as RunAborted
from ._errors import SizeNamesFailed as SizeNamesFailed
from ._errors import SyncError as SyncError
from ._health import CloudHealth as CloudHealth
from ._model import Correction as Correction
from ._model import Deferral as Deferral
from ._model import DeletedResource as DeletedResource
from ._model import EarlierRun as EarlierRun
from ._model import Kind as Kind
from ._model import Observation as Observation
from ._model import ObservedResource as ObservedResource
from ._model import Plan as Plan
from ._model import Reason as Reason
from ._model import SizeNameEntry as SizeNameEntry
from ._model import Status as Status
from ._model import SyncOutcome as SyncOutcome
from ._pacing import default_max_concurrent as default_max_concurrent
from ._pacing import first_delay as first_delay
from ._pacing import stagger_offset as stagger_offset
from ._rules import DeletedWindow as DeletedWindow
from ._rules import absence_delete_instant as absence_delete_instant
from ._rules import cap_errors as cap_errors
from ._rules import create_instant as create_instant
from ._rules import create_missing_from_history as create_missing_from_history
from ._rules import deferral_of_absence_delete as deferral_of_absence_delete
from ._rules import deferral_of_create as deferral_of_create
from ._rules import deferral_of_reported_delete as deferral_of_reported_delete
from ._rules import deferral_of_update as deferral_of_update
from ._rules import deferral_of_whole_life as deferral_of_whole_life
from ._rules import delete_is_skipped as delete_is_skipped
from ._rules import deleted_servers_window as deleted_servers_window
from ._rules import drift as drift
from ._rules import held_no_row as held_no_row
from ._rules import inside_recent_window as inside_recent_window
from ._rules import past_newest_event as past_newest_event
from ._rules import poll_instant as poll_instant
from ._rules import reported_delete_instant as reported_delete_instant
from ._rules import reported_within_run as reported_within_run
from ._rules import whole_life_start as whole_life_start
from ._run import RunSettings as RunSettings
from ._run import RunStats as RunStats
from ._run import run_sync as run_sync
from ._runner import CloudsReadiness as CloudsReadiness
from ._runner import RunnerOutcome as RunnerOutcome
from ._runner import SyncAlreadyRunning as SyncAlreadyRunning
from ._runner import SyncNotStarted as SyncNotStarted
from ._runner import UnknownCloud as UnknownCloud
from ._scheduler import read_told_instant as read_told_instant
from ._scheduler import run_cloud_scheduler as run_cloud_scheduler
from ._service import SyncService as SyncService

__all__ = [
    "ADAPTERS",
    "BATCH_SIZE",
    "AccountCheck",
    "Adapter",
    "CloudHealth",
    "CloudsReadiness",
    "Correction",
    "Deferral",
    "DeletedResource",
    "DeletedWindow",
    "EarlierRun",
    "Kind",
    "Observation",
    "ObserveRequest",
    "ObservedResource",
    "Plan",
    "Progress",
    "Reason",
    "RunAborted",
    "RunSettings",
    "RunStats",
    "RunnerOutcome",
    "SizeNameEntry",
    "SizeNamesFailed",
    "Status",
    "SyncAlreadyRunning",
    "SyncError",
    "SyncNotStarted",
    "SyncOutcome",
    "SyncService",
    "UnknownCloud",
    "absence_delete_instant",
    "adapter_class",
    "cap_errors",
    "check_adapter_environments",
    "create_instant",
    "create_missing_from_history",
    "default_max_concurrent",
    "deferral_of_absence_delete",
    "deferral_of_create",
    "deferral_of_reported_delete",
    "deferral_of_update",
    "deferral_of_whole_life",
    "delete_is_skipped",
    "deleted_servers_window",
    "diff",
    "drift",
    "event_of",
    "first_delay",
    "held_no_row",
    "inside_recent_window",
    "past_newest_event",
    "poll_instant",
    "provider_of",
    "read_told_instant",
    "reported_delete_instant",
    "reported_within_run",
    "run_cloud_scheduler",
    "run_sync",
    "stagger_offset",
    "validate_adapter_config",
    "whole_life_start",
]
