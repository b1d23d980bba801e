"""--out files: complete or absent, events through the collector's mapping, and bad input in one line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from tally.collector import Mapped, map_notification
from tally.simulator import (
    GeneratorError,
    NotificationFileError,
    generate_month,
    read_notifications,
    read_oracle,
    write_month,
)
from tally.simulator import files as files_module


def test_files_hold_the_month(tmp_path: Path) -> None:
    month = generate_month(3, "2026-05", scale=0.2, days=4, faults="held-back,duplicates")
    paths = write_month(month, tmp_path / "out")
    lines = paths["notifications.jsonl"].read_bytes().splitlines()
    assert len(lines) == len(month.notifications)
    docs = list(read_notifications(paths["notifications.jsonl"]))
    assert {d["exchange"] for d in docs} >= {"nova", "neutron", "openstack", "glance"}
    held = [orjson.loads(line) for line in paths["held-back.jsonl"].read_bytes().splitlines()]
    held_ids = {orjson.loads(h["body"]["oslo.message"])["message_id"] for h in held}
    published_ids = {orjson.loads(d["body"]["oslo.message"])["message_id"] for d in docs}
    assert held_ids and held_ids.isdisjoint(published_ids)
    events = [orjson.loads(line) for line in paths["events.jsonl"].read_bytes().splitlines()]
    mapped = [map_notification(orjson.dumps(d["body"]), cloud="os-sim") for d in docs + held]
    assert [e["event_id"] for e in events] == [m.event_id for m in mapped if isinstance(m, Mapped)]
    assert read_oracle(paths["oracle.json"].read_bytes()) == month.oracle


def test_rewriting_without_held_back_removes_the_stale_file(tmp_path: Path) -> None:
    write_month(generate_month(3, "2026-05", scale=0.2, days=3, faults="held-back"), tmp_path / "out")
    write_month(generate_month(3, "2026-05", scale=0.2, days=3), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "events.jsonl",
        "notifications.jsonl",
        "oracle.json",
    ]


def test_a_failure_leaves_nothing_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    month = generate_month(3, "2026-05", scale=0.2, days=2)

    def broken(*args: object, **kwargs: object) -> object:
        raise OSError("disk full")

    monkeypatch.setattr(files_module, "expected_events", broken)
    with pytest.raises(OSError, match="disk full"):
        write_month(month, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"period": "2026-13"}, "is not a month"),
        ({"period": "July"}, "is not YYYY-MM"),
        ({"period": "2026-12"}, "has not ended yet"),
        ({"period": "2026-07", "scale": 0}, "scale 0 is outside"),
        ({"period": "2026-07", "days": 40}, "days 40 is outside 1..31"),
        ({"period": "2026-07", "seed": -1}, "seed must be a non-negative integer"),
        ({"period": "2026-07", "cloud": " "}, "cloud must be a non-empty name"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"seed": 1, "now": datetime(2026, 11, 29, tzinfo=UTC), **kwargs}
    seed, period = args.pop("seed"), args.pop("period")
    with pytest.raises(GeneratorError, match=message) as info:
        generate_month(seed, period, **args)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_a_broken_notifications_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_bytes(b'{"exchange":"nova","routing_key":"notifications.info","body":{}}\n{broken\n')
    with pytest.raises(NotificationFileError, match="line 2: not JSON"):
        list(read_notifications(path))
