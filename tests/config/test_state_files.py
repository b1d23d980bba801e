"""The SQLite store and the outbox create their files group-writable in a group-writable state
directory (a container started under another uid of group 0 can write them), and leave the umask
alone in any other directory."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tally.outbox import open_outbox
from tally.store._sqlite import SqliteStore


@pytest.fixture
def umask_022() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}


async def _fill(directory: Path) -> dict[str, int]:
    """The modes of the state files while the store and the outbox are open (the WAL and the
    shared-memory files exist only then)."""
    store = SqliteStore(str(directory / "tally.sqlite3"))
    await store.open()
    try:
        await store.migrate_up()
        async with open_outbox(directory / "outbox.sqlite3"):
            pass
            return await anyio.to_thread.run_sync(_modes, directory)
    finally:
        await store.aclose()


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize(("directory_mode", "file_mode"), [(0o770, 0o660), (0o700, 0o644), (0o1777, 0o644)])
def test_state_files_are_as_group_writable_as_their_directory(
    tmp_path: Path, directory_mode: int, file_mode: int
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(directory_mode)
    modes = anyio.run(_fill, state, backend="asyncio")
    assert {"tally.sqlite3", "tally.sqlite3-wal", "tally.sqlite3-shm", "outbox.sqlite3"} <= modes.keys()
    assert all(mode == file_mode for mode in modes.values()), {k: oct(v) for k, v in modes.items()}


@pytest.mark.usefixtures("umask_022")
def test_an_older_builds_files_are_widened_by_their_owner(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    anyio.run(_fill, shared, backend="asyncio")  # 0755 directory: files 0644, as an older build left them
    shared.chmod(0o770)
    anyio.run(_fill, shared, backend="asyncio")
    assert stat.S_IMODE((shared / "tally.sqlite3").stat().st_mode) == 0o664
    assert stat.S_IMODE((shared / "outbox.sqlite3").stat().st_mode) == 0o664
