"""The image tests' engine: ``scripts/container`` builds the image on a base made from Debian's
packages and wraps podman with what this kind of machine needs (runc, explicit rlimits); this
module runs containers through it and removes every one, and every volume, a test made."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "container"
EXAMPLE_ENV = ROOT / "deploy" / "examples" / "container.env"
# A cold base (debootstrap) and the image build together: 2.6 to 5 minutes measured (docs/benchmarks.md).
BUILD_TIMEOUT_S = 600


def engine(*argv: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``podman ARGV`` through the script (its runtime); podman's own message when it fails."""
    done = subprocess.run(
        [str(SCRIPT), "podman", *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    if check and done.returncode != 0:
        pytest.fail(f"podman {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done


def unavailable(reason: str) -> None:
    """No engine or no image: a failure under CI (where the image must be checked), else a skip."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def build(tag: str) -> None:
    """The image as ``tag``, built on the cached (or a new) Debian base by the project's script."""
    try:
        done = subprocess.run(
            [str(SCRIPT), "build", tag], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        unavailable(f"scripts/container build did not finish within {BUILD_TIMEOUT_S} s")
    if done.returncode != 0:
        unavailable(f"scripts/container build {tag} exited {done.returncode}:\n{done.stderr[-3000:]}")


@dataclass
class Container:
    name: str
    port: int  # the host port published to the daemon's port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        done = engine("logs", self.name, check=False)
        return (done.stdout + done.stderr)[-4000:]

    def exec(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return engine("exec", self.name, *argv, check=check)

    def wait_ready(self, within_s: float = 60) -> float:
        """Seconds from now until ``/readyz`` answered 200."""
        started = time.monotonic()
        while True:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            state = engine("inspect", "--format", "{{.State.Status}}", self.name, check=False).stdout.strip()
            assert state == "running", f"the container is {state}:\n{self.logs()}"
            assert time.monotonic() - started < within_s, f"not ready within {within_s} s:\n{self.logs()}"
            time.sleep(0.1)

    def terminate(self) -> tuple[int, float]:
        """SIGTERM, then the exit code and the seconds until the process ended."""
        started = time.monotonic()
        engine("kill", "--signal", "TERM", self.name)
        code = engine("wait", self.name, timeout=60).stdout.strip()
        return int(code), time.monotonic() - started


@contextmanager
def running(image: str, port: int, *options: str, container_port: int = 8080) -> Iterator[Container]:
    """``podman run -d`` of ``image`` read-only, with the example env file, ``port`` published on
    127.0.0.1; the container (and its anonymous volumes) removed at the end, whatever happened."""
    name = f"tally-test-{uuid.uuid4().hex[:10]}"
    argv = [str(SCRIPT), "run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp"]
    argv += ["--env-file", str(EXAMPLE_ENV), "-p", f"127.0.0.1:{port}:{container_port}", *options, image]
    started = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    try:
        assert started.returncode == 0, f"podman run exited {started.returncode}: {started.stderr.strip()}"
        yield Container(name, port)
    finally:
        engine("rm", "--force", "--volumes", "--time", "0", name, check=False)


@contextmanager
def volume() -> Iterator[str]:
    """A named volume of its own, removed at the end."""
    name = f"tally-test-{uuid.uuid4().hex[:10]}"
    engine("volume", "create", name)
    try:
        yield name
    finally:
        engine("volume", "rm", "--force", name, check=False)


def bridge_gateway() -> str:
    """The host's address on podman's default network: what host.containers.internal resolves to."""
    done = engine("network", "inspect", "podman", "--format", "{{range .Subnets}}{{.Gateway}}{{end}}")
    return done.stdout.strip()
