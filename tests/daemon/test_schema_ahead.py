"""A replica started on a schema migrated by a newer Tally (a version above every migration this build
has) refuses to start: exit 2, one line naming both versions; ``tally migrate`` refuses too."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from daemon_support import daemon_env, free_port, tally

from tally.store._migrations import load_migrations


@dataclass(frozen=True)
class Newer:
    """A daemon's settings on a store whose schema is ``newer``; this build's migrations end at ``latest``."""

    env: dict[str, str]
    latest: int
    newer: int


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def newer(request: pytest.FixtureRequest, tmp_path: Path) -> Newer:
    """A daemon's settings on a store of each backend, migrated, then marked migrated by a newer build."""
    state = tmp_path / "state"
    if request.param == "sqlite":
        settings = daemon_env(state, free_port())
    else:
        settings = daemon_env(state, free_port(), TALLY_REPORTING_DB_URL=request.getfixturevalue("pg_url"))
    assert tally(settings, "migrate", "up").returncode == 0
    latest = len(load_migrations(request.param))
    insert = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_a_newer_build', ?)"
    if request.param == "sqlite":
        with sqlite3.connect(state / "tally.sqlite3") as db:
            db.execute(insert, (latest + 3, "2026-12-01T00:00:00.000000Z"))
    else:
        with psycopg.connect(settings["TALLY_REPORTING_DB_URL"], autocommit=True) as db:
            db.execute(insert.replace("?", "%s"), (latest + 3, "2026-12-01T00:00:00Z"))
    return Newer(settings, latest, latest + 3)


def test_tally_run_on_a_newer_schema_is_exit_2_in_one_line(newer: Newer) -> None:
    done = tally(newer.env, "run")
    assert done.returncode == 2, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("tally: ")]
    assert line == (
        f"tally: the database schema is at version {newer.newer}, newer than this build knows "
        f"(its migrations end at {newer.latest}): a newer Tally migrated it; run that build, "
        f"or roll the schema back with its `tally migrate down {newer.latest}`"
    )
    assert "Traceback" not in done.stderr and "tally ready" not in done.stderr


def test_tally_migrate_says_ahead_and_refuses_to_move(newer: Newer) -> None:
    env = newer.env
    status = tally(env, "migrate", "status")
    assert (status.returncode, status.stdout.strip()) == (
        1,
        f"schema version {newer.newer} of {newer.latest} (ahead: migrated by a newer build)",
    )
    for action in (["up"], ["down", "2"]):
        done = tally(env, "migrate", *action)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            f"tally migrate: the database schema is at version {newer.newer}, newer than this build knows "
            f"(its migrations end at {newer.latest}): use the newer Tally's `tally migrate`"
        )
    assert "(ahead" in tally(env, "migrate", "status").stdout  # nothing was rolled back
