"""``tally usage``: one export from a store URL and from a running API, as CSV and JSON, and its errors."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import INGEST, READER, live_server
from test_routes_usage import known_history

from tally.cli import main

WINDOW = ["--from", "2026-03-01T00:00:00Z", "--to", "2026-03-02T00:00:00Z"]


def csv_lines(text: str) -> dict[str, dict[str, str]]:
    return {r["resource_id"]: r for r in csv.DictReader(io.StringIO(text))}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A store holding the known history, served by a live API: (store URL, API base URL)."""
    url = f"sqlite:///{tmp_path / 'tally.sqlite3'}"
    with live_server(url) as server:
        response = httpx.post(
            f"{server.base_url}/api/v1/events",
            headers={"Authorization": f"Bearer {INGEST}"},
            json=known_history(),
        )
        assert response.status_code == 200, response.text
        yield url, server.base_url


def test_store_and_api_give_the_same_csv(
    served: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, base = served
    from_store, from_api = tmp_path / "store.csv", tmp_path / "api.csv"
    assert main(["usage", *WINDOW, "--store", url, "--out", str(from_store)]) == 0
    monkeypatch.setenv("TALLY_API_TOKEN", READER)
    assert main(["usage", *WINDOW, "--api", base, "--out", str(from_api)]) == 0
    assert from_store.read_text() == from_api.read_text()
    lines = csv_lines(from_store.read_text())
    assert (lines["vm-1"]["presence_s"], lines["vm-1"]["vcpus_s"]) == ("72000", "216000")
    assert lines["vol-1"]["size_gb_s"] == "8640000"


def test_json_and_groups(served: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, base = served
    out = tmp_path / "usage.json"
    assert (
        main(
            ["usage", *WINDOW, "--store", url, "--format", "json", "--group-by", "flavor", "--out", str(out)]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    by_flavor = {(i["resource_type"], i["flavor"]): i["quantities_s"].get("vcpus") for i in doc["items"]}
    assert by_flavor == {
        ("instance", "m1.large"): "144000",
        ("instance", "m1.small"): "72000",
        ("volume", None): None,
    }
    monkeypatch.setenv("TALLY_API_TOKEN", READER)
    api_out = tmp_path / "api.json"
    args = [
        "usage",
        *WINDOW,
        "--api",
        base,
        "--format",
        "json",
        "--group-by",
        "flavor",
        "--out",
        str(api_out),
    ]
    assert main(args) == 0
    assert json.loads(api_out.read_text()) == doc


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--from", "2026-03-01T00:00:00", "--to", "2026-03-02T00:00:00Z"], "--from: instant without a zone"),
        (["--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z"], "--to: must be later than from"),
        ([*WINDOW, "--group-by", "colour"], "--group-by: unknown member 'colour'"),
    ],
)
def test_bad_arguments_name_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["usage", *argv, "--store", "sqlite:///nowhere.sqlite3"]) == 2
    assert message in capsys.readouterr().err


def test_api_answer_errors_are_one_line(
    served: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, base = served
    monkeypatch.setenv("TALLY_API_TOKEN", "not-a-token")
    assert main(["usage", *WINDOW, "--api", base]) == 2
    assert "the API answered 401" in capsys.readouterr().err


def test_a_rated_export_from_the_api_is_the_stores(
    served: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--price-list`` names a YAML file against a store, a stored list against the API: same bytes."""
    url, base = served
    example = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
    assert main(["price-list", "load", str(example), "--store", url]) == 0
    from_store, from_api = tmp_path / "store.csv", tmp_path / "api.csv"
    assert (
        main(["usage", *WINDOW, "--store", url, "--price-list", str(example), "--out", str(from_store)]) == 0
    )
    monkeypatch.setenv("TALLY_API_TOKEN", READER)
    assert main(["usage", *WINDOW, "--api", base, "--price-list", "public-eu", "--out", str(from_api)]) == 0
    assert from_api.read_bytes() == from_store.read_bytes()
    assert b"instance.flavor.m1.small" in from_api.read_bytes()
