"""The simulator's own metrics (publishing and simulated months), defined once on the default registry."""

from __future__ import annotations

from prometheus_client import Counter

PUBLISHED = Counter("tally_simulator_published_total", "Notifications the simulator's publisher sent.")
SYNCS = Counter(
    "tally_simulator_syncs_total", "Sync runs a simulated month asked for, by outcome.", ["status"]
)
