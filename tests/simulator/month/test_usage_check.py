"""The export read back and judged against the oracle: exact lines pass, any other difference is off
unless the interval comparison tolerated that resource; unreadable exports name the line at fault."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tally.simulation.usage_check import check_usage, summary_lines
from tally.simulator._verdict import Judgement
from tally.simulator.compare import Comparison, Difference, ResourceDiff
from tally.simulator.oracle import Oracle, OracleInterval, OracleResource
from tally.usage import ExportError, read_export

T0 = datetime(2026, 7, 1, tzinfo=UTC)
H = timedelta(hours=1)
SMALL = {"vcpus": 2, "ram_gb": 0.5, "disk_gb": 20, "flavor": "m1.small"}
ORACLE = Oracle(
    "os-sim",
    1,
    T0,
    T0 + 24 * H,
    (
        OracleResource(
            "instance",
            "vm-1",
            "classic",
            (
                OracleInterval(T0 + H, T0 + 5 * H, "active", "p", SMALL),
                OracleInterval(T0 + 5 * H, T0 + 9 * H, "shutoff", "p", SMALL),
            ),
        ),
    ),
)
HEADER = (
    "cloud,resource_type,resource_id,project_id,state,presence_s,"
    "disk_gb_s,ram_gb_s,size_gb_s,vcpus_s,creates,deletes,received_at\r\n"
)
GOOD = HEADER + (
    "os-sim,instance,vm-1,p,active,14400,288000,7200,,28800,1,0,2026-07-02T00:00:00Z\r\n"
    "os-sim,instance,vm-1,p,shutoff,14400,288000,7200,,28800,0,1,2026-07-02T00:00:00Z\r\n"
)


def no_differences() -> Comparison:
    return Comparison((), 1, {}, {}, timedelta(0), 0)


def tolerated_vm() -> Comparison:
    diff = Difference(T0, T0 + H, ("state",), None, None, Judgement(True, "poll-dated update"))
    return Comparison((ResourceDiff("instance", "vm-1", (diff,), 0.0, 0.0),), 0, {}, {}, timedelta(0), 0)


def test_an_exact_export_passes() -> None:
    check = check_usage(ORACLE, read_export(GOOD.encode()), no_differences())
    assert (check.passed, check.exact, check.mismatches) == (True, 1, ())


def test_one_second_more_is_off_unless_the_comparison_tolerated_the_resource() -> None:
    wrong = GOOD.replace("shutoff,14400,", "shutoff,14401,")
    check = check_usage(ORACLE, read_export(wrong.encode()), no_differences())
    assert not check.passed
    assert check.mismatches[0].detail == "project p state shutoff: presence oracle 14400 s, export 14401 s"
    assert "export off: instance vm-1" in summary_lines(check)[1]
    assert check_usage(ORACLE, read_export(wrong.encode()), tolerated_vm()).passed


def test_a_quantity_off_and_a_resource_only_exported_are_off() -> None:
    wrong = GOOD.replace(",7200,,28800,1", ",7200.1,,28800,1")
    [m] = check_usage(ORACLE, read_export(wrong.encode()), no_differences()).mismatches
    assert m.detail == "project p state active: ram_gb oracle 7200 s, export 7200.1 s"
    extra = GOOD + "os-sim,volume,vol-9,p,available,60,,,600,,1,0,2026-07-02T00:00:00Z\r\n"
    [m] = check_usage(ORACLE, read_export(extra.encode()), no_differences()).mismatches
    assert (m.resource_id, m.detail) == ("vol-9", "project p state available: only the export has usage")


def test_json_export_reads_the_same() -> None:
    doc = (
        b'{"from":"2026-07-01T00:00:00Z","to":"2026-07-02T00:00:00Z","as_of":null,"group_by":[],"items":['
        b'{"cloud":"os-sim","resource_type":"instance","resource_id":"vm-1","project_id":"p","state":"active",'
        b'"presence_s":"14400","quantities_s":{"vcpus":"28800","ram_gb":"7200","disk_gb":"288000"}},'
        b'{"cloud":"os-sim","resource_type":"instance","resource_id":"vm-1","project_id":"p","state":"shutoff",'
        b'"presence_s":"14400","quantities_s":{"vcpus":"28800","ram_gb":"7200","disk_gb":"288000"}}]}'
    )
    export = read_export(doc)
    assert export.lines[("os-sim", "instance", "vm-1")][("p", "active")].quantities_s["ram_gb"] == Decimal(
        7200
    )
    assert check_usage(ORACLE, export, no_differences()).passed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"resource_type,state\r\nx,y\r\n", "line 1: a per-resource export starts with cloud"),
        (HEADER.encode() + b"os-sim,instance,vm-1,p,active,1.2.3,,,,,0,0,\r\n", "line 2 presence_s: '1.2.3'"),
        (b'{"group_by":["flavor"],"items":[]}', "a group export cannot be checked per resource"),
        ((GOOD + GOOD.split("\r\n", 1)[1]).encode(), "line 4: instance vm-1 has two lines"),
    ],
)
def test_unreadable_exports_name_the_line(data: bytes, message: str) -> None:
    with pytest.raises(ExportError, match=message.replace("(", r"\(").replace(".", r"\.")):
        read_export(data)
