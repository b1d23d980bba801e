"""``tally migrate up|down N|status`` on the store the settings name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tally.daemon.cli import main


def test_migrate_commands_on_the_embedded_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALLY_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("TALLY_REPORTING_DB_URL", raising=False)
    assert main(["migrate", "status"]) == 1
    assert "schema version 0 of 7 (behind)" in capsys.readouterr().out
    assert main(["migrate", "up"]) == 0
    assert "schema at version 7" in capsys.readouterr().out
    assert (tmp_path / "tally.sqlite3").exists()
    assert main(["migrate", "down", "5"]) == 0
    assert "rolled back 7, 6; schema at version 5" in capsys.readouterr().out
    assert main(["migrate", "down", "99"]) == 2
    assert "no migration version 99" in capsys.readouterr().err
    assert main(["migrate", "up"]) == 0
    assert main(["migrate", "status"]) == 0
    assert "schema version 7 of 7 (current)" in capsys.readouterr().out
