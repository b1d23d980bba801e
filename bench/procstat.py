"""A process's CPU seconds read from Linux's /proc: what the benches charge a server, a backend or a
fake cloud (one parser of ``/proc/<pid>/stat`` for all of them; each caller decides what a process
that is gone counts as)."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used so far; ``OSError`` when it is gone."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
