"""The reconciliation's rules: the pure functions of ``_rules`` and the model they speak.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.reconcile``'s names from the package.
"""

from ._booking import event_of as event_of
from ._context import RunStats as RunStats
from ._diff import diff as diff
from ._model import Deferral as Deferral
from ._model import EarlierRun as EarlierRun
from ._model import Kind as Kind
from ._model import Plan as Plan
from ._model import Reason as Reason
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

__all__ = [
    "Deferral",
    "EarlierRun",
    "Kind",
    "Plan",
    "Reason",
    "RunStats",
    "absence_delete_instant",
    "cap_errors",
    "create_instant",
    "create_missing_from_history",
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
    "held_no_row",
    "inside_recent_window",
    "past_newest_event",
    "poll_instant",
    "reported_delete_instant",
    "reported_within_run",
    "whole_life_start",
]
