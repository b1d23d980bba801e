"""Where ``tally simulate`` keeps its record and takes its bus: the store ``tally run`` is configured
with, a store that already holds the cloud refused, and a local broker it cannot make a vhost on."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tally.cli import main
from tally.simulation.vhost import url_vhost, with_vhost

TINY = ["--seed", "1", "--period", "2026-07", "--scale", "0.3", "--days", "1", "--factor", "0"]


def test_simulate_uses_the_store_tally_run_is_configured_with_and_refuses_one_holding_the_cloud(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALLY_REPORTING_DB_URL", pg_url)
    summary = tmp_path / "summary.json"
    args = ["simulate", *TINY, "--faults", "duplicates", "--json", str(summary)]
    assert main([*args, "--state-dir", str(tmp_path / "first")]) == 0, capsys.readouterr().out
    doc = orjson.loads(summary.read_bytes())
    assert doc["store"].startswith("postgresql://") and doc["store"].endswith(pg_url.rsplit("/", 1)[1])
    assert not (tmp_path / "first" / "tally.sqlite3").exists()
    capsys.readouterr()

    # Run again into the same store: the first run's resources would be compared too.
    assert main([*args, "--state-dir", str(tmp_path / "second")]) == 2
    error = capsys.readouterr().err
    assert "already holds resources of cloud os-sim" in error and error.count("\n") == 1

    # --store-url still overrides the setting.
    assert main([*args, "--store-url", f"sqlite:///{tmp_path / 'own.sqlite3'}"]) == 0
    assert (tmp_path / "own.sqlite3").exists()


def test_simulate_refuses_a_local_broker_without_rabbitmqctl(
    tmp_path: Path, amqp_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code = main(["simulate", *TINY, "--amqp-url", amqp_url, "--state-dir", str(tmp_path / "state")])
    assert code == 2
    error = capsys.readouterr().err
    assert error.startswith("tally simulate: rabbitmqctl is not on PATH") and error.count("\n") == 1


def test_the_run_vhost_replaces_the_one_the_url_names() -> None:
    url = "amqp://sim:s%2Fecret@127.0.0.1:5672/?heartbeat=30"
    assert url_vhost(url) == "/"
    assert url_vhost("amqp://h/%2Fprod") == "/prod"
    moved = with_vhost(url, "tally-simulate-0123456789ab")
    assert moved == "amqp://sim:s%2Fecret@127.0.0.1:5672/tally-simulate-0123456789ab?heartbeat=30"
    assert url_vhost(moved) == "tally-simulate-0123456789ab"
