"""Start, stop and describe the development cloud; both start and stop are idempotent.

A start on a cloud whose every program runs does nothing. A start that finds some programs of an
earlier run (one died, or a start was cut short) stops them and what they used first, then starts
afresh. Stop ends every program the pid files name, drops the databases, deletes the vhost and
removes the state directory but its logs (kept for reading what went wrong).
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from datetime import UTC, datetime
from typing import Any

from . import api, bootstrap, configs, infra, install, processes, resources, snapshot
from .errors import DevcloudError
from .layout import APIS, DATABASES, REGION, Layout

START_BUDGET_S = 360.0
CLOUD_NAME = "devcloud-admin"
UNRESTARTABLE = {
    "nova-compute": "its fake virt driver keeps the servers in memory, and nova refuses a second start "
    "without a node identity file; stop and start the whole cloud",
}


def status(layout: Layout) -> dict[str, Any]:
    """Which programs run, and whether the cloud is whole (every program alive, the info written)."""
    programs = [processes.keystone_api(layout), *processes.services(layout)]
    alive = processes.running(layout)
    return {
        "running": sorted(alive),
        "missing": sorted(p.name for p in programs if p.name not in alive),
        "whole": layout.info_file.is_file() and all(p.name in alive for p in programs),
    }


def start(layout: Layout, say: Any) -> dict[str, Any]:
    """Start the cloud unless it runs whole; its description (``devcloud.json``)."""
    seconds = install.install(layout, layout.state / "install.log")
    if seconds:
        say(f"installed {install.LOCK.name} into {layout.venv} in {seconds:.0f}s")
    now = status(layout)
    if now["whole"]:
        say("already running")
        described: dict[str, Any] = json.loads(layout.info_file.read_text())
        return described
    if now["running"]:
        say(f"cleaning up an incomplete earlier run ({', '.join(now['running'])} still running)")
        stop(layout, say)
    started = time.monotonic()
    deadline = started + START_BUDGET_S
    infra.require_backends(layout)
    infra.require_free_ports(layout)
    try:
        return _start_fresh(layout, deadline, say)
    except BaseException:
        # The ports were free, so whatever runs now under this state directory is this start's own.
        stop(layout, lambda _line: None)
        raise


def _start_fresh(layout: Layout, deadline: float, say: Any) -> dict[str, Any]:
    started = deadline - START_BUDGET_S
    _fresh_state(layout)
    dropped = infra.create_databases(layout)
    if dropped:
        say(f"dropped databases left by an earlier run: {', '.join(dropped)}")
    infra.create_vhost(layout)
    passwords = _bootstrap(layout, deadline, say)
    say(f"keystone ready ({time.monotonic() - started:.0f}s)")
    programs = processes.services(layout)
    for program in programs:
        processes.start(layout, program)
    for program in programs:
        _wait_api(layout, program, deadline)
    say(f"APIs answering ({time.monotonic() - started:.0f}s)")
    admin = resources.Admin(layout, passwords["admin"])
    resources.wait_for_backends(admin, deadline)
    made = resources.make_resources(admin)
    info = _describe(layout, passwords["admin"], made)
    _write_private(layout.clouds_yaml, _clouds_yaml(info))
    _write_private(layout.info_file, json.dumps(info, indent=2) + "\n")
    say(f"ready in {time.monotonic() - started:.0f}s: {layout.info_file}")
    return info


def restart(layout: Layout, names: list[str], say: Any) -> None:
    """Stop the named programs of the running cloud, start them together, and return when the cloud
    is ready again by the start's own measure (APIs answering, the schedulers knowing the backends)."""
    if not status(layout)["whole"]:
        raise DevcloudError("no running cloud to restart programs of (scripts/devcloud start)")
    programs = {
        name: program
        for name, program in processes.services_by_name(layout).items()
        if name not in UNRESTARTABLE
    }
    for name in names:
        if name in UNRESTARTABLE:
            raise DevcloudError(f"{name} cannot be restarted alone: {UNRESTARTABLE[name]}")
        if name not in programs:
            raise DevcloudError(f"no program named {name}; restartable: {', '.join(sorted(programs))}")
    started = time.monotonic()
    deadline = started + START_BUDGET_S
    processes.stop(layout, set(names))
    for name in names:
        processes.start(layout, programs[name])
    for name in names:
        _wait_api(layout, programs[name], deadline)
    password = json.loads(layout.info_file.read_text())["admin"]["password"]
    resources.wait_for_backends(resources.Admin(layout, password), deadline)
    for name in names:
        if processes.exited(layout, name):
            raise DevcloudError(
                f"{name} exited after its restart; logs/{name}.log: {processes.log_tail(layout, name)}"
            )
    say(f"restarted {', '.join(names)}; ready in {time.monotonic() - started:.0f}s")


def _bootstrap(layout: Layout, deadline: float, say: Any) -> dict[str, str]:
    """Databases and keystone ready, from the snapshot when there is one; the two passwords."""
    restored = snapshot.restore(layout)
    if restored is not None:
        configs.write_all(layout, restored["service"])
        bootstrap.octavia_ca(layout)
        _start_keystone(layout, deadline)
        return restored
    passwords = {"admin": secrets.token_hex(16), "service": secrets.token_hex(16)}
    configs.write_all(layout, passwords["service"])
    bootstrap.octavia_ca(layout)
    bootstrap.sync_schemas(layout, passwords["admin"])
    _start_keystone(layout, deadline)
    bootstrap.catalog(layout, passwords["admin"], passwords["service"])
    snapshot.save(layout, passwords)
    say(f"saved the bootstrapped databases for later starts: {snapshot.directory(layout)}")
    return passwords


def _start_keystone(layout: Layout, deadline: float) -> None:
    keystone = processes.keystone_api(layout)
    processes.start(layout, keystone)
    _wait_api(layout, keystone, deadline)


def _wait_api(layout: Layout, program: processes.Program, deadline: float) -> None:
    if program.port is None:
        return
    try:
        api.wait_http(
            f"http://127.0.0.1:{program.port}/", deadline, lambda: not processes.exited(layout, program.name)
        )
    except DevcloudError as error:
        tail = processes.log_tail(layout, program.name)
        raise DevcloudError(
            f"{program.name} did not start ({error}); logs/{program.name}.log: {tail}"
        ) from error


def _fresh_state(layout: Layout) -> None:
    for directory in (layout.etc, layout.run, layout.data):
        shutil.rmtree(directory, ignore_errors=True)
    for stale in (layout.info_file, layout.clouds_yaml):
        stale.unlink(missing_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    for old in layout.logs.glob("*.log"):
        old.unlink()


def stop(layout: Layout, say: Any) -> None:
    """Stop what runs, drop the databases, delete the vhost, keep the logs; safe to repeat."""
    stopped = processes.stop_all(layout)
    if stopped:
        say(f"stopped {len(stopped)} programs")
    if infra.port_open(layout.mysql_host, layout.mysql_port):
        dropped = infra.drop_databases(layout)
        if dropped:
            say(f"dropped {len(dropped)} databases")
    if infra.port_open(layout.rabbit_host, layout.rabbit_port) and infra.delete_vhost(layout):
        say(f"deleted vhost {layout.vhost}")
    for directory in (layout.etc, layout.run, layout.data):
        shutil.rmtree(directory, ignore_errors=True)
    for stale in (layout.info_file, layout.clouds_yaml):
        stale.unlink(missing_ok=True)


def _describe(layout: Layout, admin_password: str, made: dict[str, str]) -> dict[str, Any]:
    return {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cloud": CLOUD_NAME,
        "clouds_yaml": str(layout.clouds_yaml),
        "auth_url": f"{layout.url('keystone')}/v3",
        "region_name": REGION,
        "admin": {
            "username": "admin",
            "password": admin_password,
            "project_name": "admin",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        },
        "vhost": layout.vhost,
        "transport_url": layout.transport_url,
        "amqp_url": f"amqp://guest:guest@{layout.rabbit_host}:{layout.rabbit_port}/{layout.vhost}",
        "ports": dict(layout.ports),
        "endpoints": {service_type: layout.url(name) for name, service_type, _ in APIS},
        "databases": [layout.database(name) for name in DATABASES],
        "logs": str(layout.logs),
        "resources": made,
    }


def _clouds_yaml(info: dict[str, Any]) -> str:
    admin = info["admin"]
    lines = [
        "clouds:",
        f"  {info['cloud']}:",
        "    auth_type: password",
        "    auth:",
        f"      auth_url: {info['auth_url']}",
        f"      username: {admin['username']}",
        f"      password: {admin['password']}",
        f"      project_name: {admin['project_name']}",
        f"      user_domain_name: {admin['user_domain_name']}",
        f"      project_domain_name: {admin['project_domain_name']}",
        f"    region_name: {info['region_name']}",
        "    interface: public",
        "    identity_api_version: 3",
    ]
    return "\n".join(lines) + "\n"


def _write_private(path: Any, text: str) -> None:
    path.write_text(text)
    path.chmod(0o600)
