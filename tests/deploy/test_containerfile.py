"""The Containerfile and its example: linted here (no hadolint on the machine) and run as written
without an engine; test_image.py builds the image and runs it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
from daemon_support import free_port

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "Containerfile"
EXAMPLE_ENV = ROOT / "deploy" / "examples" / "container.env"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Containerfile, continuation lines joined, comments dropped."""
    joined = re.sub(
        r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    )
    found = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), " ".join(rest.split())))
    return found


def final_stage(text: str) -> list[tuple[str, str]]:
    steps = instructions(text)
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def env_of(steps: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in steps:
        if word == "ENV":
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def read_env_file(path: Path) -> dict[str, str]:
    pairs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value.strip()
    return pairs


def test_the_image_runs_as_a_uid_of_group_0_with_a_group_writable_state_dir() -> None:
    steps = final_stage(CONTAINERFILE.read_text())
    [user] = [rest for word, rest in steps if word == "USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid == "0", "USER must be uid:0 so that an arbitrary uid in group 0 can write"
    run = " ".join(rest for word, rest in steps if word == "RUN")
    assert "--gid 0" in run and "--no-user-group" in run, "one gid: the user's primary group is 0"
    assert re.search(r"chown \d+:0 /var/lib/tally", run)
    mode = re.search(r"chmod (0?[0-7]{3}) /var/lib/tally", run)
    assert mode and int(mode.group(1), 8) & 0o070 == 0o070, "the state directory must be group-writable"
    env = env_of(steps)
    assert env["TALLY_STATE_DIR"] == "/var/lib/tally"
    assert env["OS_CLIENT_CONFIG_FILE"] == "/etc/openstack/clouds.yaml"
    assert ("VOLUME", '["/var/lib/tally"]') in steps


def test_the_healthcheck_probes_healthz_and_the_base_is_an_argument() -> None:
    text = CONTAINERFILE.read_text()
    steps = final_stage(text)
    [check] = [rest for word, rest in steps if word == "HEALTHCHECK"]
    assert "/healthz" in check and "CMD" in check
    assert "TALLY_REPORTING_HTTP_PORT" in check, "the probe must ask the port the daemon listens on"
    assert "--format docker" in text, "the build command must keep the HEALTHCHECK (OCI drops it)"
    first = instructions(text)[0]
    assert first[0] == "ARG" and first[1].startswith("BASE=")
    assert all(rest.split()[0] == "${BASE}" for word, rest in instructions(text) if word == "FROM")
    assert ("ENTRYPOINT", '["tally"]') in steps and ("CMD", '["run"]') in steps
    copied = " ".join(rest for word, rest in instructions(text) if word == "COPY")
    assert "LICENSE" in copied


def test_the_example_env_file_runs_as_written(tmp_path: Path) -> None:
    """The image's ENV plus the example, with the state dir and port moved out of the image's paths."""
    env = env_of(final_stage(CONTAINERFILE.read_text())) | read_env_file(EXAMPLE_ENV)
    for name, value in env.items():
        if name.startswith("TALLY_") and (name.endswith("_FILE") or name == "TALLY_REPORTING_CLOUDS_CONFIG"):
            assert Path(value).exists(), f"{name}={value} names a file the example run does not mount"
    port = free_port()
    env |= {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TALLY_STATE_DIR": str(tmp_path / "state"),
        "TALLY_REPORTING_HTTP_ADDR": "127.0.0.1",
        "TALLY_REPORTING_HTTP_PORT": str(port),
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tally", "run"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "not ready within 30 s"
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert proc.returncode == 0
