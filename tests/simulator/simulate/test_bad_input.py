"""Bad input: one line on stderr naming what was wrong, exit 2, nothing half-written in --out."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tally.daemon.cli import main

SMALL = ["--seed", "1", "--scale", "0.3", "--days", "2", "--factor", "0"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--period", "2099-01"], "has not ended"),
        (
            ["--period", "2026-07", "--faults", "duplicates,lost-notifications"],
            "unknown fault 'lost-notifications'",
        ),
        (["--period", "2026-07", "--faults", "pre-existing,missing-create"], "cannot be combined"),
        (["--period", "2026-13"], "is not a month"),
    ],
)
@pytest.mark.parametrize("command", [["simulate"], ["simulator", "run"]])
def test_bad_month_arguments_exit_2_with_one_line_and_no_files(
    command: list[str], argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([*command, *SMALL, *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_simulator_run_without_a_broker_needs_out(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TALLY_SIM_AMQP_URL", raising=False)
    assert main(["simulator", "run", "--period", "2026-07", *SMALL]) == 2
    assert "needs --out" in capsys.readouterr().err


def test_a_remote_broker_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["simulate", "--period", "2026-07", *SMALL, "--amqp-url", "amqp://u:pw@rabbit.example.org/"])
    assert code == 2
    err = capsys.readouterr().err
    assert "not on loopback" in err and "pw" not in err


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"format": 2, "cloud": "os-sim"}, "format 2 is not 3"),
        (
            {
                "format": 3,
                "cloud": "os-sim",
                "seed": 1,
                "period_from": "2026-07-01T00:00:00Z",
                "period_to": "2026-08-01T00:00:00Z",
                "resources": [],
                "counts": [],
                "faults": [],
                "traffic": [],
                "extra": 1,
            },
            "extra",
        ),
    ],
)
def test_compare_refuses_an_oracle_of_another_format_or_with_unknown_members(
    document: dict[str, object], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oracle = tmp_path / "oracle.json"
    oracle.write_bytes(orjson.dumps(document))
    store = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert main(["simulator", "compare", "--oracle", str(oracle), "--store-url", store]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
