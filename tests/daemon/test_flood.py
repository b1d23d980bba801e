"""A hostile flood into ``tally run`` while good notifications keep coming: the quick size of
``bench/flood.py`` (its docstring tells the kinds and the checks), run here on a RabbitMQ vhost the
bench makes of its own.

3,000 hostile messages (about 30 MB, every 500th over the 1 MiB limit) among 300 good notifications:
every bad one counted by a metric, 0 crashes, every good one stored once, at most ten warning lines a
minute of each kind and the count of those left out said, resident memory within 150 MB of the
start, and ``/healthz`` (asked every 10 ms during the flood) with a p99 under 250 ms. The full size
(10,000 messages, 300 MB) is ``python -m bench.flood``; figures in docs/benchmarks.md ("flood").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.rabbitmq]

ROOT = Path(__file__).resolve().parents[2]
HEALTHZ_P99_MS = 250.0
RSS_GROWTH_MB = 150.0


def test_a_hostile_flood_is_counted_and_bounded_and_the_good_ones_are_stored_once(
    amqp_url: str, tmp_path: Path
) -> None:
    broker = urlsplit(amqp_url)._replace(path="/").geturl()
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.flood",
            "--quick",
            "--broker",
            broker,
            "--max-healthz-p99-ms",
            str(HEALTHZ_P99_MS),
            "--max-rss-growth-mb",
            str(RSS_GROWTH_MB),
            "--report",
            str(report_path),
            "--workdir",
            str(tmp_path / "work"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["problems"] == []
    assert report["counted_total"] == report["hostile"] == 3000
    assert (report["stored"], report["stored_distinct"]) == (300, 300)  # 0 lost, 0 doubled
    assert report["exit_code"] == 0
    # Three kinds of warning, ten lines each at most in the minute, and the lines counting the rest.
    assert report["left_out_said"] >= 3 and report["warning_lines"] <= 3 * 11 + 3
    assert report["healthz_p99_ms"] < HEALTHZ_P99_MS
    assert report["rss_peak_mb"] - report["rss_start_mb"] < RSS_GROWTH_MB
