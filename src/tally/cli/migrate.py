"""``tally migrate up|down N|status``: the store's schema, on the store the settings name.

The store is ``TALLY_REPORTING_DB_URL`` when set, else the SQLite file in
``TALLY_STATE_DIR``. ``status`` exits 1 while the schema is behind, so a
deployment script can wait on it. On PostgreSQL ``up`` also makes the events partitions of the current
month and the next ``TALLY_EVENTS_PARTITIONS_AHEAD`` (``_partitions``). A schema migrated by a newer
build (a version above every migration this one has) is ``ahead``: ``status`` says so and exits 1,
and ``up`` and ``down`` refuse (exit 2), since this build cannot undo or build on migrations it does
not have.
"""

from __future__ import annotations

import argparse
from typing import Any

from tally.config import Settings
from tally.store import RetentionPolicy, SchemaStatus, StoreError, maintain_events, open_store

from ._refuse import fail


def register(subparsers: Any) -> None:
    migrate = subparsers.add_parser("migrate", help="apply, roll back or show the database migrations")
    actions = migrate.add_subparsers(dest="migrate_command", metavar="ACTION", required=True)
    up = actions.add_parser("up", help="apply every pending migration")
    up.set_defaults(handler=migrate_up)
    down = actions.add_parser("down", help="roll back every migration above version N")
    down.add_argument("target", type=int, metavar="N", help="the version to roll back to (0 = empty)")
    down.set_defaults(handler=migrate_down)
    status = actions.add_parser("status", help="the applied version and the newest this build knows")
    status.set_defaults(handler=migrate_status)


def _url() -> str:
    return Settings().store_url


def _ahead(status: SchemaStatus) -> str:
    return (
        f"the database schema is at version {status.current}, newer than this build knows "
        f"(its migrations end at {status.latest}): use the newer Tally's `tally migrate`"
    )


async def migrate_up(args: argparse.Namespace) -> int:
    settings = Settings()
    try:
        async with open_store(settings.store_url) as store:
            if (before := await store.schema_status()).ahead:
                return fail("migrate", StoreError(_ahead(before)))
            applied = await store.migrate_up()
            status = await store.schema_status()
            # The coming months' partitions too (PostgreSQL), so that a database migrated before the
            # daemon starts has them; retention is left to the daemon.
            upkeep = await maintain_events(
                store, ahead=settings.events_partitions_ahead, policy=RetentionPolicy()
            )
    except (StoreError, OSError) as exc:
        return fail("migrate", exc)
    print(f"applied {', '.join(map(str, applied)) or 'nothing'}; schema at version {status.current}")
    if upkeep is not None:
        made = ", ".join(f"{m:%Y-%m}" for m in upkeep.ensured.created) or "none"
        print(
            f"events partitions: {upkeep.stats.attached} months attached (made {made}), "
            f"{upkeep.stats.default_rows} rows in events_default"
        )
    return 0


async def migrate_down(args: argparse.Namespace) -> int:
    try:
        async with open_store(_url()) as store:
            if (before := await store.schema_status()).ahead:
                return fail("migrate", StoreError(_ahead(before)))
            undone = await store.migrate_down(args.target)
            status = await store.schema_status()
    except (StoreError, OSError) as exc:
        return fail("migrate", exc)
    print(f"rolled back {', '.join(map(str, undone)) or 'nothing'}; schema at version {status.current}")
    return 0


async def migrate_status(args: argparse.Namespace) -> int:
    try:
        async with open_store(_url()) as store:
            status = await store.schema_status()
    except (StoreError, OSError) as exc:
        return fail("migrate", exc)
    state = "behind" if status.behind else "ahead: migrated by a newer build" if status.ahead else "current"
    print(f"schema version {status.current} of {status.latest} ({state})")
    return 1 if status.behind or status.ahead else 0
