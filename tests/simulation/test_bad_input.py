"""Bad input: one line on stderr naming what was wrong, exit 2, nothing half-written in --out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import orjson
import pytest

from tally.cli import main
from tally.store import open_store

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
        ({"format": 2, "cloud": "os-sim"}, "format 2 is not 4"),
        ({"format": 3, "cloud": "os-sim"}, "format 3 is not 4"),
        (
            {
                "format": 4,
                "cloud": "os-sim",
                "seed": 1,
                "scale": 1,
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


@pytest.mark.parametrize("seed", ["-1", str(2**64)])
@pytest.mark.parametrize("command", [["simulate"], ["simulator", "run"]])
def test_a_seed_out_of_range_exits_2_with_one_line_and_no_files(
    command: list[str], seed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [*command, "--seed", seed, "--period", "2026-07", *SMALL[2:], "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"seed {seed} is out of range" in err and err.count("\n") == 1
    assert not out.exists()


ORACLE_DOC = {
    "format": 4,
    "cloud": "os-sim",
    "seed": 1,
    "scale": 0.3,
    "period_from": "2026-07-01T00:00:00Z",
    "period_to": "2026-08-01T00:00:00Z",
    "resources": [],
    "counts": [],
    "faults": [],
    "traffic": [],
}


@pytest.fixture
def migrated_store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"

    async def migrate() -> None:
        async with open_store(url) as store:
            await store.migrate_up()

    anyio.run(migrate, backend="asyncio")
    return url


def _compare(tmp_path: Path, oracle: object, store: str, *extra: str) -> int:
    path = tmp_path / "oracle.json"
    path.write_bytes(oracle if isinstance(oracle, bytes) else orjson.dumps(oracle))
    return main(["simulator", "compare", "--oracle", str(path), "--store-url", store, *extra])


@pytest.mark.parametrize(
    ("oracle", "extra", "message"),
    [
        (b"{not json", (), "oracle: not JSON"),
        ({**ORACLE_DOC, "period_to": "2099-02-01T00:00:00Z"}, (), "which has not passed"),
        (ORACLE_DOC, ("--settle", "-5"), "--settle -5 must not be negative"),
        ({**ORACLE_DOC, "scale": 0}, (), "oracle: scale must be a number above 0"),
        ({**ORACLE_DOC, "format": 3}, (), "oracle: format 3 is not 4"),
        (
            {k: v for k, v in ORACLE_DOC.items() if k != "scale"},
            (),
            "oracle: member 'scale' missing in the document",
        ),
        (
            {
                **ORACLE_DOC,
                "resources": [
                    {
                        "resource_type": "loadbalancer",
                        "resource_id": "lb",
                        "workload": "steady",
                        "intervals": [],
                        "faults": [],
                    }
                ],
            },
            (),
            "oracle: member 'platform_created' missing in resources[0]",
        ),
        (
            {**ORACLE_DOC, "resources": [{"resource_type": "instance", "resource_id": "vm"}]},
            (),
            "resources[0]",
        ),
    ],
)
def test_compare_refuses_an_oracle_it_cannot_judge(
    oracle: object,
    extra: tuple[str, ...],
    message: str,
    migrated_store: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _compare(tmp_path, oracle, migrated_store, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_reads_an_empty_migrated_store_of_an_empty_oracle(
    migrated_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _compare(tmp_path, ORACLE_DOC, migrated_store) == 0
    assert "passed: 0 exact" in capsys.readouterr().out


def test_compare_judges_a_rated_export_and_refuses_one_without_its_price_list(
    migrated_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices, export = tmp_path / "prices.yaml", tmp_path / "rated.csv"
    prices.write_text(
        'name: p\ncurrency: EUR\nversions:\n  - effective_from: "2026-01-01T00:00:00Z"\n'
        '    types:\n      instance: {vcpu_hour: "0.01"}\n'
    )
    window = ["--from", "2026-07-01T00:00:00Z", "--to", "2026-08-01T00:00:00Z"]
    assert (
        main(["usage", *window, "--store", migrated_store, "--price-list", str(prices), "--out", str(export)])
        == 0
    )
    extra = ("--export", str(export), "--price-list", str(prices))
    assert _compare(tmp_path, ORACLE_DOC, migrated_store, *extra) == 0
    assert "rated export passed: 0 resources exact" in capsys.readouterr().out
    assert _compare(tmp_path, ORACLE_DOC, migrated_store, "--export", str(export)) == 2
    err = capsys.readouterr().err
    assert "--price-list: --export needs the price list it was rated with" in err and err.count("\n") == 1


def test_compare_refuses_a_store_it_cannot_read_and_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "store.sqlite3"
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    bare = tmp_path / "bare.sqlite3"
    sqlite3.connect(bare).execute("CREATE TABLE t (a)").connection.close()
    for store, message in (
        (f"sqlite:///{missing}", "No such file or directory"),
        (f"sqlite:///{text}", "is not an SQLite database"),
        (f"sqlite:///{bare}", "holds no tally schema"),
        ("mysql://db/tally", "scheme 'mysql' is not supported"),
    ):
        assert _compare(tmp_path, ORACLE_DOC, store) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not missing.parent.exists()
