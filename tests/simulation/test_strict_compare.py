"""The judge is strict: a small lockstep month with every fault passes, and a copy of its store with one
event moved (or one run's deferrals changed) is caught, each with its cause."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from tally import simulator
from tally.cli import main
from tally.core import Event, StoredEvent
from tally.simulation.simulate import SETTLE_S, SimulateOptions, simulate
from tally.simulation.stored import record_from_store_url
from tally.simulator._platform import platform_created
from tally.simulator._verdict import (
    CREATE_AT_PLATFORM_INSTANT,
    CREATE_EARLY,
    CREATE_LATE,
    DEFERRING_RUN,
    DELETE_BY_ABSENCE,
    LATER_RUN,
    POLL_DATED_UPDATE,
    REPORTED_DELETE_OFF,
)
from tally.simulator.compare import Comparison, StoredRecord, compare
from tally.simulator.generator import Month, generate_month
from tally.simulator.generator import _month as simulator_month

FAULTS = frozenset(
    {
        "missing-create",
        "duplicates",
        "reordering",
        "refused-shapes",
        "held-back",
        "missing-delete",
        "lost-update",
    }
)
Key = tuple[str, str]
# Seed 3's first three days hold every tolerated kind: poll-dated updates, deletes by absence and
# creates at the platform's instant.
SEED = 3


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Month, StoredRecord, str]:
    """The month at scale 0.3, its stored record and the store's URL."""
    state: Path = tmp_path_factory.mktemp("strict")
    month = generate_month(SEED, "2026-07", scale=0.3, days=3, faults=FAULTS)
    options = SimulateOptions(
        seed=SEED, period="2026-07", scale=0.3, days=3, faults=FAULTS, factor=0.0, state_dir=state
    )

    async def run() -> tuple[StoredRecord, str]:
        result = await simulate(options, month=month)
        return await record_from_store_url(result.store_url, month.cloud), result.store_url

    record, store_url = anyio.run(run, backend="asyncio")
    return month, record, store_url


@pytest.fixture(scope="module")
def month_and_record(simulated: tuple[Month, StoredRecord, str]) -> tuple[Month, StoredRecord]:
    month, record, _ = simulated
    return month, record


def test_compare_judges_a_month_from_its_oracle_file_alone(
    simulated: tuple[Month, StoredRecord, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tally simulator compare`` told no ``--scale`` passes a month simulated at scale 0.3 and never
    regenerates a world: the oracle file carries the scale and each resource's platform instant (a
    compare that regenerated at scale 1 read a correct month as two load balancers off)."""
    month, _, store_url = simulated

    def regenerate(*args: object, **kwargs: object) -> None:
        raise AssertionError("compare regenerated the month's world")

    for module in (simulator, simulator.generator, simulator_month):
        monkeypatch.setattr(module, "generate_world", regenerate)
        monkeypatch.setattr(module, "generate_month", regenerate)
    assert month.oracle.scale == 0.3
    assert any(r.resource_type == "loadbalancer" and r.platform_created for r in month.oracle.resources)
    oracle = tmp_path / "oracle.json"
    oracle.write_bytes(month.oracle.to_json())
    judged = ["simulator", "compare", "--oracle", str(oracle), "--store-url", store_url]
    code = main([*judged, "--settle", str(SETTLE_S)])
    out = capsys.readouterr().out
    assert code == 0, out
    verdict = " ".join(out.split())
    assert re.search(r"passed: \d+ exact, \d+ tolerated \(.*\), 0 off$", verdict), out


def judge(month: Month, record: StoredRecord) -> Comparison:
    return compare(
        month.oracle,
        record,
        settle=timedelta(seconds=SETTLE_S),
        platform_created=platform_created(month.world),
    )


def _tampered(record: StoredRecord, key: Key, event_id: str, **changes: Any) -> StoredRecord:
    def edit(stored: StoredEvent) -> StoredEvent:
        if stored.event.event_id != event_id:
            return stored
        event: Event = replace(stored.event, **changes)
        return replace(stored, event=event)

    histories = dict(record.histories)
    histories[key] = tuple(edit(e) for e in histories[key])
    return replace(record, histories=histories)


def _tolerated(comparison: Comparison, cause: str) -> list[tuple[Key, str, str]]:
    return [
        ((r.resource_type, r.resource_id), d.judgement.correction_id or "", d.judgement.run_id or "")
        for r in comparison.resources
        for d in r.differences
        if d.tolerated and d.cause == cause
    ]


def _causes_of(comparison: Comparison, key: Key) -> set[str]:
    [diff] = [r for r in comparison.resources if (r.resource_type, r.resource_id) == key]
    return {d.cause for d in diff.differences if not d.tolerated}


def test_an_honest_month_passes_and_each_tolerance_names_its_correction_and_run(
    month_and_record: tuple[Month, StoredRecord],
) -> None:
    month, record = month_and_record
    result = judge(month, record)
    assert result.passed, result.off_by_cause
    assert result.exact > 100
    run_ids = {r.run_id for r in record.runs}
    for cause in (POLL_DATED_UPDATE, DELETE_BY_ABSENCE, CREATE_AT_PLATFORM_INSTANT):
        found = _tolerated(result, cause)
        assert found, cause
        for key, correction, run in found:
            assert correction in {e.event.event_id for e in record.histories[key]}
            assert run in run_ids


@pytest.mark.parametrize(("seconds", "cause"), [(-30, CREATE_EARLY), (30, CREATE_LATE)])
def test_a_create_moved_30_s_is_caught(
    month_and_record: tuple[Month, StoredRecord], seconds: int, cause: str
) -> None:
    month, record = month_and_record
    exact = {(r.resource_type, r.resource_id) for r in judge(month, record).resources}
    key, first = next(
        (k, h[0].event)
        for k, h in sorted(record.histories.items())
        if k not in exact
        and h[0].event.event_type.endswith("create.end")
        and h[0].event.timestamp > month.period_from
    )
    moved = _tampered(record, key, first.event_id, timestamp=first.timestamp + timedelta(seconds=seconds))
    assert _causes_of(judge(month, moved), key) == {cause}


def test_a_reported_delete_moved_1_s_is_caught(month_and_record: tuple[Month, StoredRecord]) -> None:
    month, record = month_and_record
    key, event = next(
        (k, e.event)
        for k, h in sorted(record.histories.items())
        for e in h
        if e.event.event_type == "sync.delete"
        and e.event.payload["provider"]["reason"] == "reported delete"
        # The only delete of its history: a collector delete at the same instant would stand for it.
        and not any(x.event.event_type.endswith("delete.end") for x in h)
    )
    moved = _tampered(record, key, event.event_id, timestamp=event.timestamp + timedelta(seconds=1))
    assert _causes_of(judge(month, moved), key) == {REPORTED_DELETE_OFF}


def test_a_poll_dated_update_booked_one_run_late_is_caught(
    month_and_record: tuple[Month, StoredRecord],
) -> None:
    month, record = month_and_record
    key, correction, run_id = _tolerated(judge(month, record), POLL_DATED_UPDATE)[0]
    runs = [r for r in record.runs if r.completed]
    nxt = runs[[r.run_id for r in runs].index(run_id) + 1]
    [event] = [e.event for e in record.histories[key] if e.event.event_id == correction]
    provider = {**event.payload["provider"], "sync_run_id": nxt.run_id}
    moved = _tampered(
        record, key, correction, timestamp=nxt.started_at, payload={**event.payload, "provider": provider}
    )
    assert _causes_of(judge(month, moved), key) == {LATER_RUN}


def _quiet_for_a_day(history: tuple[StoredEvent, ...], end: Any) -> bool:
    """An instance whose create is followed by a day (and an hour) with no event, inside the period."""
    first = history[0].event
    if first.event_type != "compute.instance.create.end" or "size" not in first.payload:
        return False
    quiet = first.timestamp + timedelta(days=1, hours=2)
    return quiet < end and all(e.event.timestamp > quiet for e in history[1:])


def test_a_wrong_flavor_for_a_day_is_caught_and_weighed(month_and_record: tuple[Month, StoredRecord]) -> None:
    month, record = month_and_record
    key, create = next(
        (k, h[0].event)
        for k, h in sorted(record.histories.items())
        if k[0] == "instance" and _quiet_for_a_day(h, month.period_to)
    )
    right = dict(create.payload["size"])
    wrong = (
        {"vcpus": 8, "ram_gb": 16, "disk_gb": 160, "flavor": "m1.xlarge"}
        if right["flavor"] != "m1.xlarge"
        else {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
    )
    t = create.timestamp + timedelta(hours=1)

    def resize(at: Any, size: dict[str, Any], n: int) -> StoredEvent:
        payload = {"state": create.payload["state"], "size": size}
        event = replace(
            create,
            event_id=f"tamper-{n}",
            timestamp=at,
            event_type="compute.instance.resize.confirm.end",
            payload=payload,
        )
        return StoredEvent(event, at)

    histories = dict(record.histories)
    histories[key] = (*histories[key], resize(t, wrong, 1), resize(t + timedelta(days=1), right, 2))
    result, honest = judge(month, replace(record, histories=histories)), judge(month, record)
    assert _causes_of(result, key) == {"wrong size"}
    # Resource-seconds cannot see it; the quantities weigh it on both flavors' lines.
    assert result.seconds_off == honest.seconds_off

    def delta(flavor: str) -> tuple[float, float]:
        line, base = (c.quantities[("instance", flavor, "vcpu_h")] for c in (result, honest))
        return line.signed - base.signed, line.absolute - base.absolute

    assert delta(wrong["flavor"]) == (pytest.approx(24 * wrong["vcpus"]), pytest.approx(24 * wrong["vcpus"]))
    assert delta(right["flavor"]) == (pytest.approx(-24 * right["vcpus"]), pytest.approx(24 * right["vcpus"]))


def test_a_delete_by_absence_at_a_run_that_deferred_it_is_caught(
    month_and_record: tuple[Month, StoredRecord],
) -> None:
    month, record = month_and_record
    key, _, run_id = _tolerated(judge(month, record), DELETE_BY_ABSENCE)[0]
    runs = tuple(replace(r, deferred=r.deferred | {key}) if r.run_id == run_id else r for r in record.runs)
    assert _causes_of(judge(month, replace(record, runs=runs)), key) == {DEFERRING_RUN}
