"""``scripts/devcloud``'s refusals: one line naming what and where, exit 2, nothing left behind.

Each runs a second cloud's command (a state directory, prefix and virtualenv of the test's own)
beside the session's running cloud, whose ports it finds taken.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.realcloud
DEVCLOUD = Path(__file__).resolve().parent.parent.parent / "scripts" / "devcloud"


def second_cloud(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    settings = {
        "TALLY_DEVCLOUD_DIR": str(tmp_path / "state"),
        "TALLY_DEVCLOUD_PREFIX": "tallydevrefused",
    }
    return subprocess.run(
        [str(DEVCLOUD), *args],
        env={**os.environ, **settings, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def databases(prefix: str) -> list[str]:
    listed = subprocess.run(
        ["mysql", "-h", "127.0.0.1", "-u", "root", "-N", "-B", "-e", f"SHOW DATABASES LIKE '{prefix}\\_%'"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return listed.stdout.split()


def test_a_taken_port_is_named_and_nothing_is_made(devcloud: dict[str, Any], tmp_path: Path) -> None:
    base = str(devcloud["ports"]["keystone"])  # the session's cloud holds it
    done = second_cloud(tmp_path, "start", TALLY_DEVCLOUD_PORT_BASE=base)
    assert done.returncode == 2
    taken = f"port 127.0.0.1:{base} (keystone) is taken by another program; set TALLY_DEVCLOUD_PORT_BASE"
    assert done.stderr.strip().splitlines() == [f"devcloud: {taken}"]
    assert databases("tallydevrefused") == []


def test_pypi_not_answering_is_named(tmp_path: Path) -> None:
    done = second_cloud(
        tmp_path,
        "install",
        TALLY_DEVCLOUD_VENV=str(tmp_path / "venv"),
        TALLY_DEVCLOUD_CACHE=str(tmp_path / "cache"),
        UV_DEFAULT_INDEX="http://127.0.0.1:9/simple",  # nothing listens on the discard port
        UV_HTTP_RETRIES="0",
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("devcloud: installing requirements.lock from PyPI into ")
    assert "PyPI unreachable" in line


def test_a_bad_setting_is_named(tmp_path: Path) -> None:
    done = second_cloud(tmp_path, "start", TALLY_DEVCLOUD_PORT_BASE="19x00")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "devcloud: TALLY_DEVCLOUD_PORT_BASE must be a port from 1024 to 65528"
    ]


def test_stop_is_idempotent_and_removes_a_leftover_database(tmp_path: Path) -> None:
    subprocess.run(
        ["mysql", "-h", "127.0.0.1", "-u", "root", "-e", "CREATE DATABASE tallydevrefused_nova"], check=True
    )
    first = second_cloud(tmp_path, "stop")
    assert first.returncode == 0, first.stderr
    assert "dropped 1 databases" in first.stdout
    assert databases("tallydevrefused") == []
    again = second_cloud(tmp_path, "stop")
    assert (again.returncode, again.stdout.strip()) == (0, "devcloud: stopped")
