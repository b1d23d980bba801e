"""The schema role of the shared SQL: which numbered migrations are applied, applying and undoing them.

How one migration file is run and recorded is the dialect's (``SqlDialect.run_migration``).
"""

from __future__ import annotations

import logging

from ._interface import MigrationError, SchemaStatus
from ._migrations import Migration, load_migrations
from ._sql_dialect import SqlDialect

log = logging.getLogger(__name__)


class SchemaSql:
    """``SchemaRole``'s migrations over a dialect; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        self._sql = sql
        self._migrations: list[Migration] = load_migrations(sql.dialect)

    async def _applied_version(self) -> int:
        recs = await self._sql.fetch("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return int(recs[0][0]) if recs else 0

    @property
    def latest_version(self) -> int:
        return self._migrations[-1].version if self._migrations else 0

    async def schema_status(self) -> SchemaStatus:
        return SchemaStatus(current=await self._applied_version(), latest=self.latest_version)

    async def migrate_up(self) -> list[int]:
        current = await self._applied_version()
        applied: list[int] = []
        for migration in self._migrations:
            if migration.version <= current:
                continue
            await self._sql.run_migration(migration, up=True)
            log.info(
                "migration applied dialect=%s version=%d name=%s",
                self._sql.dialect,
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
        return applied

    async def migrate_down(self, target: int) -> list[int]:
        if target < 0 or target > self.latest_version:
            raise MigrationError(
                f"no migration version {target} to roll back to (latest is {self.latest_version})"
            )
        current = await self._applied_version()
        undone: list[int] = []
        for migration in reversed(self._migrations):
            if migration.version <= target or migration.version > current:
                continue
            await self._sql.run_migration(migration, up=False)
            log.info(
                "migration rolled back dialect=%s version=%d name=%s",
                self._sql.dialect,
                migration.version,
                migration.name,
            )
            undone.append(migration.version)
        return undone
