"""Creating a state file (the SQLite store, the outbox): shared with the group when its directory is.

A container platform may start the image under any uid of group 0 on a volume that another uid
filled (OpenShift's restricted profile). The state directory is group-writable for that, and the
files in it must be too, or the next uid's SQLite opens them read-only ("attempt to write a
readonly database") while ``/readyz`` says ready. SQLite creates a database 0644 less the umask and
its ``-wal`` and ``-shm`` files with the database's own mode, so the one mode to set is the
database's. Where the directory is not group-writable (systemd's StateDirectory, 0700), or is
sticky (/tmp), nothing changes: the umask decides, as before.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

GROUP_SHARED = 0o660
_COMPANIONS = ("", "-wal", "-shm", "-journal")


def prepare_state_file(path: Path) -> None:
    """Make ``path``'s directory, and when it is group-writable make ``path`` (and the SQLite
    companions this uid owns) readable and writable by the group, before SQLite opens it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.parent.stat().st_mode
    # A sticky directory (/tmp) is everyone's scratch space, not a state directory shared on purpose.
    if not mode & stat.S_IWGRP or mode & stat.S_ISVTX:
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, GROUP_SHARED)
    except FileExistsError:
        _share_existing(path)
        return
    try:
        os.fchmod(fd, GROUP_SHARED)  # os.open's mode went through the umask
    finally:
        os.close(fd)


def _share_existing(path: Path) -> None:
    """A volume an older build filled holds 0644 files: this uid can widen its own ones."""
    for suffix in _COMPANIONS:
        companion = path.with_name(path.name + suffix)
        try:
            info = companion.stat()
        except FileNotFoundError:
            continue
        if info.st_uid == os.getuid() and info.st_mode & GROUP_SHARED != GROUP_SHARED:
            os.chmod(companion, stat.S_IMODE(info.st_mode) | GROUP_SHARED)
