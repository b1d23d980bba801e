"""What the cloud borrows from the machine: its MariaDB databases, its RabbitMQ vhost, its ports.

Databases are named ``<prefix>_<service>``. One left behind by an earlier run that was never
stopped (a killed CI job, a reboot) is dropped and created anew at start, with a line saying so:
nothing but this cloud writes under its prefix, and a start never reuses a half-built database.
"""

from __future__ import annotations

import shutil
import socket
import subprocess

from .errors import DevcloudError
from .layout import APIS, DATABASES, HOST, Layout


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def require_free_ports(layout: Layout) -> None:
    for name, _, _ in APIS:
        port = layout.ports[name]
        if port_open(HOST, port):
            raise DevcloudError(
                f"port {HOST}:{port} ({name}) is taken by another program; set TALLY_DEVCLOUD_PORT_BASE"
            )


def _mysql(layout: Layout, statement: str) -> str:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        raise DevcloudError("the MariaDB client (mariadb or mysql) is not on PATH")
    done = subprocess.run(
        [client, "-h", layout.mysql_host, "-P", str(layout.mysql_port), "-u", "root", "-N", "-B",
         "-e", statement],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        where = f"{layout.mysql_host}:{layout.mysql_port}"
        raise DevcloudError(f"MariaDB at {where} refused {statement[:60]!r}: {done.stderr.strip()[:200]}")
    return done.stdout


def existing_databases(layout: Layout) -> list[str]:
    listed = _mysql(layout, f"SHOW DATABASES LIKE '{layout.prefix}\\_%'").split()
    ours = {layout.database(name) for name in DATABASES}
    return sorted(name for name in listed if name in ours)


def create_databases(layout: Layout) -> list[str]:
    """Create every database, dropping those an earlier run left; the names that were dropped."""
    left = existing_databases(layout)
    statements = [f"DROP DATABASE `{name}`" for name in left]
    statements += [
        f"CREATE DATABASE `{layout.database(name)}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        for name in DATABASES
    ]
    _mysql(layout, "; ".join(statements))
    return left


def drop_databases(layout: Layout) -> list[str]:
    left = existing_databases(layout)
    if left:
        _mysql(layout, "; ".join(f"DROP DATABASE `{name}`" for name in left))
    return left


def _rabbitmqctl(*args: str) -> subprocess.CompletedProcess[str]:
    ctl = shutil.which("rabbitmqctl")
    if ctl is None:
        raise DevcloudError("rabbitmqctl is not on PATH (the vhost is made with it)")
    return subprocess.run([ctl, "-q", *args], capture_output=True, text=True, check=False, timeout=60)


def vhost_exists(layout: Layout) -> bool:
    done = _rabbitmqctl("list_vhosts", "name")
    if done.returncode != 0:
        raise DevcloudError(f"rabbitmqctl list_vhosts failed: {done.stderr.strip()[:200]}")
    return layout.vhost in done.stdout.split()


def create_vhost(layout: Layout) -> None:
    if vhost_exists(layout):
        _rabbitmqctl("delete_vhost", layout.vhost)
    for args in (
        ("add_vhost", layout.vhost),
        ("set_permissions", "-p", layout.vhost, "guest", ".*", ".*", ".*"),
    ):
        done = _rabbitmqctl(*args)
        if done.returncode != 0:
            raise DevcloudError(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip()[:200]}")


def delete_vhost(layout: Layout) -> bool:
    if not vhost_exists(layout):
        return False
    done = _rabbitmqctl("delete_vhost", layout.vhost)
    if done.returncode != 0:
        raise DevcloudError(f"rabbitmqctl delete_vhost {layout.vhost} failed: {done.stderr.strip()[:200]}")
    return True


def require_backends(layout: Layout) -> None:
    if not port_open(layout.mysql_host, layout.mysql_port):
        raise DevcloudError(f"MariaDB does not answer on {layout.mysql_host}:{layout.mysql_port}")
    if not port_open(layout.rabbit_host, layout.rabbit_port):
        raise DevcloudError(f"RabbitMQ does not answer on {layout.rabbit_host}:{layout.rabbit_port}")
