"""The outbox's file lost under the running process: deleted, its directory removed, or replaced.

SQLite keeps writing to the file it opened: once its name is gone, every commit lands in an unlinked
inode that vanishes when the process exits, so a message acked after it would be lost. Before each
write the consumer's acks wait on (and the write probe), the outbox compares what its path names
with the file it opened (device and inode, from ``os.stat``: one system call).

Deleted, its directory still there on the same filesystem: the open database (still whole, the
connection reads it) is written back to the path with SQLite's backup and the outbox goes on with
the new file; nothing is lost. Any other case cannot be mended from here and is an
``OutboxWriteError`` (reason ``lost``) naming the path, so consuming stops and ``/readyz`` says why:
the directory is gone (recreated by the operator, the next try restores the file), the directory is
now on another filesystem (a volume unmounted: the file is not written to what lies beneath), or
another file stands at the path (replaced: only a restart opens it). The sender meanwhile delivers
what the open file holds.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import aiosqlite

from ._write_fault import OutboxWriteError

FileIdentity = tuple[int, int]


def identity(path: Path) -> FileIdentity:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _lost(path: Path, what: str, todo: str = "") -> OutboxWriteError:
    """The detail reads as the other faults' do ("... on PATH"), what the operator does after it."""
    return OutboxWriteError(
        "lost", f"the outbox cannot write: {what} on {path}" + (f"; {todo}" if todo else "")
    )


def mendable(path: Path, opened: FileIdentity) -> bool:
    """False while ``path`` names the file opened (nothing lost); True when it is deleted and can be
    written back. Raises ``OutboxWriteError`` when it cannot be mended (see the module docstring)."""
    try:
        found = identity(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _lost(path, f"the file cannot be looked at ({exc.strerror})") from exc
    else:
        if found == opened:
            return False
        raise _lost(path, "another file replaced the one this process opened", "restart the collector")
    try:
        directory = os.stat(path.parent)
    except OSError as exc:
        raise _lost(
            path,
            f"the file and its directory were removed under the running process ({exc.strerror})",
            "recreate the directory: the open file is written back",
        ) from exc
    if directory.st_dev != opened[0]:
        raise _lost(
            path,
            "the file was deleted and its directory is on another filesystem now (a volume unmounted?)",
            "mount it back or restart the collector",
        )
    return True


async def write_back(db: aiosqlite.Connection, path: Path) -> tuple[aiosqlite.Connection, FileIdentity]:
    """A new file at ``path`` holding what ``db`` holds (SQLite's backup), opened; ``OutboxWriteError``
    naming the path when it cannot be written (the caller keeps ``db``)."""
    try:
        restored = await aiosqlite.connect(str(path))
    except (OSError, sqlite3.Error) as exc:
        raise _lost(path, f"the file was deleted and cannot be written back ({exc})") from exc
    try:
        await db.backup(restored)
        return restored, identity(path)
    except (OSError, sqlite3.Error) as exc:
        await restored.close()
        raise _lost(path, f"the file was deleted and cannot be written back ({exc})") from exc
