"""docs/install.md's walk-through, run as written (two ports changed): from an empty directory to a
first completed sync against the fake cloud, through the daemon and its API."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from daemon_support import free_port

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "install.md"
MARKER = "<!-- install-walkthrough -->"
PORTS_LINE = re.compile(r"^export TALLY_REPORTING_HTTP_PORT=\d+ FAKE_CLOUD_PORT=\d+$", re.MULTILINE)


def walkthrough() -> str:
    text = GUIDE.read_text()
    after = text[text.index(MARKER) + len(MARKER) :]
    match = re.match(r"\s*```sh\n(.*?)\n```", after, re.DOTALL)
    assert match, f"no ```sh block right after {MARKER}"
    return match.group(1)


def test_the_guide_reaches_a_first_completed_sync(tmp_path: Path) -> None:
    script, replaced = PORTS_LINE.subn(
        f"export TALLY_REPORTING_HTTP_PORT={free_port()} FAKE_CLOUD_PORT={free_port()}", walkthrough()
    )
    assert replaced == 1, "the walk-through's ports line changed; keep it one line the test can rewrite"
    bin_dir = str(Path(sys.executable).parent)
    assert shutil.which("tally", path=bin_dir), f"no tally command next to {sys.executable}"
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    (tmp_path / "walkthrough.sh").write_text(script)
    proc = subprocess.Popen(
        ["bash", "walkthrough.sh"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=240)
    finally:
        # Whatever the script left running (on a failure half-way) goes with its process group.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    logs = {
        name: (tmp_path / name).read_text()
        for name in ("tally.log", "fake-cloud.log")
        if (tmp_path / name).exists()
    }
    assert proc.returncode == 0, f"{output}\n{logs}"
    first = json.loads((tmp_path / "first-sync.json").read_text())
    assert first["stats"]["created"] > 0 and first["stats"]["deleted"] == 0
    [run] = json.loads((tmp_path / "sync-runs.json").read_text())["items"]
    assert run["id"] == first["sync_run_id"] and run["status"] == "completed"
    assert run["stats"]["errors"] == []
    assert "ok       access rules" in output
    assert "tally ready" in logs["tally.log"] and "sync completed cloud=os-sim" in logs["tally.log"]
