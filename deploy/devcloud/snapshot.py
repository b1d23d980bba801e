"""A bootstrapped cloud's databases, kept in the cache so that a later start skips the schema syncs.

The first start of a given lock and layout runs every service's schema migrations, keystone's
bootstrap and the catalog (about 100 s of Python start-ups on two cores); it then dumps the nine
databases, keystone's key repositories and the two passwords into
``<cache>/snapshots/<key>/``. Every later start with the same key loads that dump instead (a few
seconds). The key covers the lock file and everything of the layout the databases name: the prefix,
the ports (the catalog's endpoints) and the RabbitMQ address (nova's cell mapping).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from .errors import DevcloudError
from .layout import DATABASES, LOCK, Layout


def _key(layout: Layout) -> str:
    parts = [
        hashlib.sha256(LOCK.read_bytes()).hexdigest(),
        layout.prefix,
        str(layout.port_base),
        f"{layout.mysql_host}:{layout.mysql_port}",
        f"{layout.rabbit_host}:{layout.rabbit_port}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def directory(layout: Layout) -> Path:
    return layout.cache / "snapshots" / _key(layout)


def _client(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise DevcloudError(f"none of {', '.join(names)} is on PATH")


def save(layout: Layout, passwords: dict[str, str]) -> None:
    """Dump the databases and keystone's keys beside the passwords (written whole, then renamed)."""
    target = directory(layout)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    partial.chmod(0o700)
    dump = _client("mariadb-dump", "mysqldump")
    names = [layout.database(name) for name in DATABASES]
    with (partial / "databases.sql").open("wb") as out:
        done = subprocess.run(
            [dump, "-h", layout.mysql_host, "-P", str(layout.mysql_port), "-u", "root",
             "--single-transaction",
             "--skip-comments", "--databases", *names],
            stdout=out, stderr=subprocess.PIPE, check=False, timeout=300,
        )  # fmt: skip
    if done.returncode != 0:
        raise DevcloudError(f"{dump} of the databases failed: {done.stderr.decode(errors='replace')[:200]}")
    for keys in ("fernet-keys", "credential-keys"):
        shutil.copytree(layout.data / "keystone" / keys, partial / keys)
    (partial / "passwords.json").write_text(json.dumps(passwords))
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def restore(layout: Layout) -> dict[str, str] | None:
    """Load the snapshot into the (freshly created, empty) databases; its passwords, or None."""
    source = directory(layout)
    if not (source / "passwords.json").is_file():
        return None
    client = _client("mariadb", "mysql")
    with (source / "databases.sql").open("rb") as dump:
        done = subprocess.run(
            [client, "-h", layout.mysql_host, "-P", str(layout.mysql_port), "-u", "root"],
            stdin=dump, capture_output=True, check=False, timeout=300,
        )  # fmt: skip
    if done.returncode != 0:
        raise DevcloudError(
            f"loading the snapshot {source} failed: {done.stderr.decode(errors='replace')[:200]}"
        )
    for keys in ("fernet-keys", "credential-keys"):
        destination = layout.data / "keystone" / keys
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(source / keys, destination)
    passwords: dict[str, str] = json.loads((source / "passwords.json").read_text())
    return passwords
