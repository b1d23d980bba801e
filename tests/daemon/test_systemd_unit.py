"""deploy/systemd/tally.service passes ``systemd-analyze verify`` and keeps the settings we rely on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).parents[2] / "deploy" / "systemd" / "tally.service"


def test_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        message = "systemd-analyze is missing; scripts/test installs the systemd package"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    # verify insists that ExecStart exists: point it at this checkout's tally instead of /opt/tally.
    tally = Path(sys.executable).parent / "tally"
    assert tally.exists(), f"{tally} missing: pip install -e . first"
    unit = tmp_path / "tally.service"
    unit.write_text(UNIT.read_text().replace("/opt/tally/bin/tally", str(tally)))
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # unknown keys are only warnings, so any output is a failure


def test_unit_is_notify_type_with_state_directory_and_hardening() -> None:
    lines = set(UNIT.read_text().splitlines())
    for wanted in (
        "Type=notify",
        "StateDirectory=tally",
        "Environment=TALLY_STATE_DIR=/var/lib/tally",
        "User=tally",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "Restart=on-failure",
    ):
        assert wanted in lines, wanted
