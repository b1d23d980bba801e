"""The cloud's programs: how each is started, where its pid and log go, how it is stopped.

Every program runs in a session of its own (so a gunicorn master and its worker stop together), its
pid in ``run/NAME.pid`` and its output in ``logs/NAME.log``. A pid is only signalled while its
working directory is still the cloud's state directory, so a pid reused by the system is never touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .layout import HOST, Layout

ENTRY_DIR = Path(__file__).resolve().parent
STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class Program:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None  # an API answers HTTP here once ready


def _wsgi(layout: Layout, name: str, module: str, argv: list[str], env: dict[str, str]) -> Program:
    port = layout.ports[name]
    command = [
        layout.bin("gunicorn"),
        "--bind", f"{HOST}:{port}",
        "--workers", "1",
        "--worker-class", "gthread",
        "--threads", "4",
        "--timeout", "300",
        "--graceful-timeout", "5",
        # Longer than any client's idle gap: openstacksdk's waiters poll every 2 s, gunicorn's default
        # keep-alive, so a poll could land on a connection the server was closing ("Remote end closed
        # connection without response", seen in CI). nginx's default is 75 s too.
        "--keep-alive", "75",
        "--no-control-socket",
        "--pythonpath", str(ENTRY_DIR),
        "wsgi_entry:application",
    ]  # fmt: skip
    wsgi_env = {"DEVCLOUD_WSGI_MODULE": module, "DEVCLOUD_WSGI_ARGV": json.dumps(argv)}
    return Program(f"{name}-api", command, {**env, **wsgi_env}, port)


def keystone_api(layout: Layout) -> Program:
    env = {"OS_KEYSTONE_CONFIG_DIR": str(layout.etc / "keystone")}
    return _wsgi(layout, "keystone", "keystone.wsgi.api", ["keystone-api"], env)


def services(layout: Layout) -> list[Program]:
    """Every program but keystone, which starts first and alone."""
    etc = layout.etc
    nova_conf = str(etc / "nova" / "nova.conf")
    cinder_conf = str(etc / "cinder" / "cinder.conf")
    octavia_conf = str(etc / "octavia" / "octavia.conf")
    return [
        _wsgi(layout, "placement", "placement.wsgi.api", ["placement-api"],
              {"OS_PLACEMENT_CONFIG_DIR": str(etc / "placement")}),
        _wsgi(layout, "nova", "nova.wsgi.osapi_compute", ["nova-api"],
              {"OS_NOVA_CONFIG_DIR": str(etc / "nova"), "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf"}),
        _wsgi(layout, "glance", "glance.wsgi.api", ["glance-api"],
              {"OS_GLANCE_CONFIG_DIR": str(etc / "glance")}),
        _wsgi(layout, "neutron", "neutron.wsgi.api", ["neutron-api"],
              {"OS_NEUTRON_CONFIG_DIR": str(etc / "neutron"), "OS_NEUTRON_CONFIG_FILES": "neutron.conf"}),
        _wsgi(layout, "cinder", "cinder.wsgi.api", ["cinder-api", "--config-file", cinder_conf], {}),
        _wsgi(layout, "octavia", "octavia.wsgi.api", ["octavia-api", "--config-file", octavia_conf], {}),
        Program("nova-conductor", [layout.bin("nova-conductor"), "--config-file", nova_conf]),
        Program("nova-scheduler", [layout.bin("nova-scheduler"), "--config-file", nova_conf]),
        Program("nova-compute", [layout.bin("nova-compute"), "--config-file",
                                 str(etc / "nova" / "nova-compute.conf")]),
        Program("cinder-scheduler", [layout.bin("cinder-scheduler"), "--config-file", cinder_conf]),
        Program("cinder-volume", [layout.bin("cinder-volume"), "--config-file", cinder_conf]),
        Program("octavia-worker", [layout.bin("octavia-worker"), "--config-file", octavia_conf]),
    ]  # fmt: skip


def services_by_name(layout: Layout) -> dict[str, Program]:
    return {program.name: program for program in services(layout)}


def start(layout: Layout, program: Program) -> int:
    layout.logs.mkdir(parents=True, exist_ok=True)
    layout.run.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{layout.venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        **program.env,
    }
    with (layout.logs / f"{program.name}.log").open("ab") as log:
        proc = subprocess.Popen(
            program.argv, env=env, cwd=layout.state, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    (layout.run / f"{program.name}.pid").write_text(f"{proc.pid}\n")
    return proc.pid


def _ours(layout: Layout, pid: int) -> bool:
    # Services rename their processes (setproctitle overwrites argv and environ in place), so what
    # marks a program of this cloud is the working directory it was started in: the state directory.
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(layout.state)
    except OSError:
        return False


def running(layout: Layout) -> dict[str, int]:
    """The programs whose pid file names a live process of this cloud, by name."""
    alive: dict[str, int] = {}
    for pid_file in sorted(layout.run.glob("*.pid")) if layout.run.is_dir() else []:
        text = pid_file.read_text().strip()
        if text.isdigit() and _ours(layout, int(text)):
            alive[pid_file.stem] = int(text)
    return alive


def exited(layout: Layout, name: str) -> bool:
    return name not in running(layout)


def stop_all(layout: Layout) -> list[str]:
    """SIGTERM every program's session, SIGKILL what is left after the grace; the names stopped."""
    stopped = stop(layout, set(running(layout)))
    for pid_file in layout.run.glob("*.pid") if layout.run.is_dir() else []:
        pid_file.unlink()
    return stopped


def stop(layout: Layout, names: set[str]) -> list[str]:
    """SIGTERM the named programs' sessions, SIGKILL what is left after the grace; the names stopped."""
    alive = {name: pid for name, pid in running(layout).items() if name in names}
    for pid in alive.values():
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(_ours(layout, pid) for pid in alive.values()):
        time.sleep(0.2)
    for name, pid in alive.items():
        _signal_group(pid, signal.SIGKILL)
        (layout.run / f"{name}.pid").unlink(missing_ok=True)
    return sorted(alive)


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, signum)


def log_tail(layout: Layout, name: str, lines: int = 3) -> str:
    path = layout.logs / f"{name}.log"
    if not path.is_file():
        return ""
    tail = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()][-lines:]
    return " | ".join(tail)[-400:]


def memory(layout: Layout) -> dict[str, tuple[int, int]]:
    """(PSS, RSS) in KiB of each running program, its whole session (a gunicorn master and worker)."""
    alive = running(layout)
    totals = {name: (0, 0) for name in alive}
    leaders = {pid: name for name, pid in alive.items()}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            rollup = (stat.parent / "smaps_rollup").read_text()
        except (OSError, IndexError):
            continue
        name = leaders.get(int(fields[3]))  # the session id: the program's first pid
        if name is None:
            continue
        sizes = {
            line.split(":")[0]: int(line.split()[1])
            for line in rollup.splitlines()[1:]
            if line.endswith("kB")
        }
        pss, rss = totals[name]
        totals[name] = (pss + sizes.get("Pss", 0), rss + sizes.get("Rss", 0))
    return totals
