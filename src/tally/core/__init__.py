"""The core: canonical events, ids, instants and the timeline fold. Pure; imports nothing of ours.

Everything else in Tally (store, ingest, collector, reconciliation, simulator)
speaks these types, so the fold that bills a resource is the same function
wherever a lifecycle is computed.
"""

from ._event import Category as Category
from ._event import Event as Event
from ._event import EventInvalid as EventInvalid
from ._event import ResourceKey as ResourceKey
from ._event import StoredEvent as StoredEvent
from ._event import category_of as category_of
from ._event import has_digit_run as has_digit_run
from ._event import may_hold_wide_integer as may_hold_wide_integer
from ._event import parse_event as parse_event
from ._fold import Interval as Interval
from ._fold import ResourceRow as ResourceRow
from ._fold import advance as advance
from ._fold import needs_replay as needs_replay
from ._fold import project as project
from ._fold import project_at as project_at
from ._fold import sorted_events as sorted_events
from ._ids import deterministic_event_id as deterministic_event_id
from ._ids import synthetic_event_id as synthetic_event_id
from ._labels import KNOWN_EVENT_TYPES as KNOWN_EVENT_TYPES
from ._labels import KNOWN_STATES as KNOWN_STATES
from ._labels import OTHER as OTHER
from ._labels import bounded as bounded
from ._lifecycle import lifecycle as lifecycle
from ._log_limit import LogLimit as LogLimit
from ._size_names import SizeNames as SizeNames
from ._size_names import name_event_size as name_event_size
from ._size_names import named_size as named_size
from ._snapshot import snapshot_for as snapshot_for
from ._time import INSTANT_EDGE_PATTERN as INSTANT_EDGE_PATTERN
from ._time import ONE_MICROSECOND as ONE_MICROSECOND
from ._time import InstantError as InstantError
from ._time import as_utc as as_utc
from ._time import format_instant as format_instant
from ._time import parse_instant as parse_instant
from ._time import utc_now as utc_now
from ._usage import USAGE_GROUPS as USAGE_GROUPS
from ._usage import GroupKey as GroupKey
from ._usage import UsageLine as UsageLine
from ._usage import UsageWindow as UsageWindow
from ._usage import interval_usage as interval_usage
from ._usage import numeric_members as numeric_members
from ._usage import resource_usage as resource_usage
from ._usage import seconds_text as seconds_text
from ._usage_facts import UsageFact as UsageFact
from ._usage_facts import add_fact_group_usage as add_fact_group_usage
from ._usage_facts import fact_pieces as fact_pieces
from ._usage_facts import fact_usage as fact_usage
from ._usage_facts import usage_fact as usage_fact

__all__ = [
    "INSTANT_EDGE_PATTERN",
    "KNOWN_EVENT_TYPES",
    "KNOWN_STATES",
    "ONE_MICROSECOND",
    "OTHER",
    "USAGE_GROUPS",
    "Category",
    "Event",
    "EventInvalid",
    "GroupKey",
    "InstantError",
    "Interval",
    "LogLimit",
    "ResourceKey",
    "ResourceRow",
    "SizeNames",
    "StoredEvent",
    "UsageFact",
    "UsageLine",
    "UsageWindow",
    "add_fact_group_usage",
    "advance",
    "as_utc",
    "bounded",
    "category_of",
    "deterministic_event_id",
    "fact_pieces",
    "fact_usage",
    "format_instant",
    "has_digit_run",
    "interval_usage",
    "lifecycle",
    "may_hold_wide_integer",
    "name_event_size",
    "named_size",
    "needs_replay",
    "numeric_members",
    "parse_event",
    "parse_instant",
    "project",
    "project_at",
    "resource_usage",
    "seconds_text",
    "snapshot_for",
    "sorted_events",
    "synthetic_event_id",
    "usage_fact",
    "utc_now",
]
