"""The services' virtualenv: exactly the set of requirements.lock, installed with uv from a cache
kept between runs, so that a second install on the same machine reads no network at all.

The virtualenv carries a stamp with the lock's hash; an install whose stamp matches does nothing.
A first install fetches from PyPI (two packages, ovs and simplegeneric, exist only as sdists and are
built once, then kept in the cache as wheels); a later one is tried offline first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .errors import DevcloudError
from .layout import LOCK, Layout

STAMP = ".tally-devcloud-lock"


def lock_hash() -> str:
    return hashlib.sha256(LOCK.read_bytes()).hexdigest()


def installed(layout: Layout) -> bool:
    stamp = layout.venv / STAMP
    return stamp.is_file() and stamp.read_text().strip() == lock_hash()


def _uv() -> str:
    """uv of the project's .venv (scripts/_venv.sh installs it), else one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise DevcloudError(
            "uv not found beside the Python running this or on PATH (scripts/_venv.sh installs it)"
        )
    return found


def _python() -> str:
    for candidate in ("python3.11", "python3.12", "python3.13", "python3"):
        found = shutil.which(candidate)
        if found:
            return found
    raise DevcloudError("no python3.11 or newer on PATH for the services' virtualenv")


def install(layout: Layout, log: Path) -> float:
    """Install the lock into the virtualenv unless it holds it already; the seconds it took."""
    if installed(layout):
        return 0.0
    started = time.monotonic()
    uv = _uv()
    env = {**os.environ, "UV_CACHE_DIR": str(layout.cache / "uv"), "UV_NO_PROGRESS": "1"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        if layout.venv.exists():
            shutil.rmtree(layout.venv)
        made = subprocess.run(
            [uv, "venv", "--quiet", "--python", _python(), str(layout.venv)],
            env=env, stdout=out, stderr=subprocess.STDOUT, check=False,
        )  # fmt: skip
        if made.returncode != 0:
            raise DevcloudError(f"creating the virtualenv {layout.venv} failed (log: {log})")
        base = [uv, "pip", "install", "--python", str(layout.venv / "bin" / "python"), "--no-deps"]
        offline = subprocess.run(
            [*base, "--offline", "-r", str(LOCK)], env=env, stdout=out, stderr=subprocess.STDOUT, check=False
        )
        if offline.returncode != 0:
            out.write("\n-- the cache lacks some packages: fetching them from PyPI\n")
            out.flush()
            online = subprocess.run(
                [*base, "-r", str(LOCK)], env=env, stdout=out, stderr=subprocess.STDOUT, check=False
            )
            if online.returncode != 0:
                raise DevcloudError(
                    f"installing {LOCK.name} from PyPI into {layout.venv} failed (PyPI unreachable or a"
                    f" package missing; log: {log})"
                )
    (layout.venv / STAMP).write_text(lock_hash() + "\n")
    return time.monotonic() - started
