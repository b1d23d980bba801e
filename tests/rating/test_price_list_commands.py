"""``tally price-list load|list``: a list stored and read back; editing a version in force is refused."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from rating_support import seed_store

from tally.cli import main

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"


def test_load_then_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'tally.sqlite3'}"
    anyio.run(seed_store, url, [])
    assert main(["price-list", "load", str(EXAMPLE), "--store", url]) == 0
    assert "price list public-eu: EUR, 2 version(s)" in capsys.readouterr().out
    assert main(["price-list", "list", "--store", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "public-eu: EUR"
    assert out[1].startswith("  from 2026-01-01T00:00:00Z (loaded ")
    # Loading the same document again changes nothing and is accepted.
    assert main(["price-list", "load", str(EXAMPLE), "--store", url]) == 0
    capsys.readouterr()
    edited = tmp_path / "edited.yaml"
    edited.write_text(EXAMPLE.read_text().replace('m1.small: "0.0200"', 'm1.small: "0.0210"'))
    assert main(["price-list", "load", str(edited), "--store", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"tally price-list load: {edited}: price list public-eu: the document changes the version from "
        "2026-01-01T00:00:00Z, in force since then and never edited: add a new version instead"
    )
