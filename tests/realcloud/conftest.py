"""The real development cloud (docs/devcloud.md), once per session, for the ``realcloud`` tests.

``devcloud`` answers the running cloud's description (``devcloud.json``: clouds.yaml, admin account,
RabbitMQ vhost and URL, ports). A cloud that already runs whole (``scripts/devcloud status`` exits 0,
e.g. started by the CI lane) is reused and left running; otherwise the session starts one and stops
it at the end. A cloud that cannot start fails the session with the start's one line, never skips.

The tests run only when selected (``pytest -m realcloud``): pyproject.toml deselects the marker by
default so that no other run starts the cloud by surprise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
DEVCLOUD = REPO / "scripts" / "devcloud"
# The daemon tests' helpers (running ``tally run``), also when this directory is run alone.
sys.path.insert(0, str(REPO / "tests" / "daemon"))


def devcloud_command(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DEVCLOUD), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def devcloud() -> Iterator[dict[str, Any]]:
    reuse = devcloud_command("status", timeout=120).returncode == 0
    if not reuse:
        started = devcloud_command("start")
        if started.returncode != 0:
            line = (started.stderr.strip().splitlines() or ["(no output)"])[-1]
            pytest.fail(f"the development cloud could not start: {line}", pytrace=False)
    described = devcloud_command("env", timeout=120)
    assert described.returncode == 0, described.stderr
    try:
        yield json.loads(described.stdout)
    finally:
        if not reuse:
            stopped = devcloud_command("stop", timeout=300)
            assert stopped.returncode == 0, stopped.stderr
