"""``tally migrate up|down N|status`` on the store the settings name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tally.cli import main
from tally.store._migrations import load_migrations


def test_migrate_commands_on_the_embedded_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALLY_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("TALLY_REPORTING_DB_URL", raising=False)
    latest = load_migrations("sqlite")[-1].version
    assert main(["migrate", "status"]) == 1
    assert f"schema version 0 of {latest} (behind)" in capsys.readouterr().out
    assert main(["migrate", "up"]) == 0
    assert f"schema at version {latest}" in capsys.readouterr().out
    assert (tmp_path / "tally.sqlite3").exists()
    assert main(["migrate", "down", "5"]) == 0
    undone = ", ".join(str(v) for v in range(latest, 5, -1))
    assert f"rolled back {undone}; schema at version 5" in capsys.readouterr().out
    assert main(["migrate", "down", "99"]) == 2
    assert "no migration version 99" in capsys.readouterr().err
    assert main(["migrate", "up"]) == 0
    assert main(["migrate", "status"]) == 0
    assert f"schema version {latest} of {latest} (current)" in capsys.readouterr().out
