"""What ``tally run`` exposes on /metrics: the histograms, no `_created` series, no simulator metric,
and a last completed sync that survives a restart because it is read from ``sync_runs``."""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime

import pytest
from deploy_support import CLOUD, Scrapes, exposed_names

pytestmark = pytest.mark.rabbitmq


def _value(text: str, sample: str) -> float:
    match = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    assert match, f"{sample} is not exposed"
    return float(match.group(1))


def test_the_sync_and_ingest_histograms_are_exposed(daemon_scrapes: Scrapes) -> None:
    text = daemon_scrapes.first
    assert _value(text, f'tally_sync_duration_seconds_count{{cloud="{CLOUD}",status="completed"}}') == 1
    assert _value(text, f'tally_sync_duration_seconds_sum{{cloud="{CLOUD}",status="completed"}}') > 0
    assert _value(text, 'tally_ingest_batch_duration_seconds_count{source="reconciliation"}') >= 1


def test_no_created_series_and_no_simulator_metric(daemon_scrapes: Scrapes) -> None:
    for text in (daemon_scrapes.first, daemon_scrapes.after_restart):
        names = exposed_names(text)
        assert not [n for n in names if n.endswith("_created")]
        assert "_created" not in text
        assert not [n for n in names if n.startswith("tally_simulator_")], names
    # The collector's and the outbox's families are there when the collector runs.
    assert "tally_collector_outbox_depth" in exposed_names(daemon_scrapes.first)


def test_the_last_completed_sync_is_read_from_the_store_after_a_restart(daemon_scrapes: Scrapes) -> None:
    with sqlite3.connect(daemon_scrapes.state_dir / "tally.sqlite3") as db:
        [(completed_at,)] = db.execute(
            "SELECT completed_at FROM sync_runs WHERE cloud = ? AND status = 'completed'", (CLOUD,)
        ).fetchall()
    recorded = datetime.fromisoformat(str(completed_at)).timestamp()
    restored = _value(
        daemon_scrapes.after_restart, f'tally_sync_last_completed_timestamp_seconds{{cloud="{CLOUD}"}}'
    )
    assert restored == pytest.approx(recorded, abs=1e-3)
    assert (
        _value(daemon_scrapes.after_restart, f'tally_sync_runs_total{{cloud="{CLOUD}",status="completed"}}')
        == 0
    )
