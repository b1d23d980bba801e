"""``tally config show`` prints the effective settings and never a secret."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tally.config import load_settings, render_settings
from tally.config.internals import redact_url


def test_render_redacts_secrets_and_url_passwords() -> None:
    settings = load_settings(
        {
            "TALLY_REPORTING_DB_URL": "postgresql://tally:hunter2@db:5432/tally",
            "TALLY_OSC_AMQP_URL": "amqp://guest:guest-pass@mq:5672/",
            "TALLY_OSC_TOKEN": "tok-123",
            "TALLY_OSC_REPORTING_URL": "https://collector:pw@reporting.example/",
        }
    )
    lines = render_settings(settings)
    text = "\n".join(lines)
    for secret in ("hunter2", "guest-pass", "tok-123", ":pw@"):
        assert secret not in text
    assert "TALLY_REPORTING_DB_URL=postgresql://tally:***@db:5432/tally" in lines
    assert "TALLY_OSC_AMQP_URL=amqp://guest:***@mq:5672/" in lines
    assert "TALLY_OSC_TOKEN=***" in lines
    assert "TALLY_OSC_REPORTING_URL=https://collector:***@reporting.example/" in lines
    assert "TALLY_SIM_API_TOKEN=" in lines
    assert "TALLY_REPORTING_SYNC_BUDGET_S=45" in lines


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:p@h/db", "postgresql://u:***@h/db"),
        ("postgresql://h/db?user=u&password=p", "postgresql://h/db?user=u&password=***"),
        ("https://h/path", "https://h/path"),
        ("not a url", "not a url"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_config_show_command(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("file-secret")
    env = {
        "PATH": "/usr/bin:/bin",
        "TALLY_REPORTING_INTERNAL_TOKEN_FILE": str(token),
        "TALLY_REPORTING_SYNC_SETTLE_S": "0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tally", "config", "show"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "TALLY_REPORTING_INTERNAL_TOKEN=***" in done.stdout.splitlines()
    assert "TALLY_REPORTING_SYNC_SETTLE_S=0" in done.stdout.splitlines()
    assert "file-secret" not in done.stdout + done.stderr


def test_config_show_refuses_bad_settings_with_one_line() -> None:
    env = {"PATH": "/usr/bin:/bin", "TALLY_REPORTING_SYNC_BUDGET_S": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "tally", "config", "show"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr == "tally: TALLY_REPORTING_SYNC_BUDGET_S=0 is outside the allowed range 1..86400\n"
