"""The store's names that only its tests take: event keys, the migration error, the upkeep's reads.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.store``'s names from the package.
"""

from ._interface import EventKey as EventKey
from ._interface import MigrationError as MigrationError
from ._upkeep import archived_month_usage as archived_month_usage
from ._upkeep import events_partition_stats as events_partition_stats

__all__ = ["EventKey", "MigrationError", "archived_month_usage", "events_partition_stats"]
