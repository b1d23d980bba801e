"""The store is assembled, not inherited: each role of the shared SQL is a plain class that holds the
dialect seam, the backends derive from the seam alone, and every ``Store`` method of an assembled
store is a role's own bound method (so a call pays no frame of the assembly's)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tally.store import Store
from tally.store._pg_steps import PgSteps
from tally.store._postgres import PgJsonPages, PostgresDialect, PostgresStore
from tally.store._sql import SqlStore
from tally.store._sql_audit import AuditSql
from tally.store._sql_catalog import CatalogSql
from tally.store._sql_credentials import CredentialsSql
from tally.store._sql_dialect import SqlDialect
from tally.store._sql_events import EventsSql
from tally.store._sql_ingest import IngestSql
from tally.store._sql_periods import PeriodsSql
from tally.store._sql_pricing import PricingSql
from tally.store._sql_projection import ProjectionSql
from tally.store._sql_projects import ProjectsSql
from tally.store._sql_schema import SchemaSql
from tally.store._sql_steps import SqlSteps
from tally.store._sql_sync import SyncRunsSql
from tally.store._sqlite import SqliteDialect, SqliteStore

ROLES = (
    SchemaSql,
    EventsSql,
    ProjectionSql,
    IngestSql,
    AuditSql,
    CatalogSql,
    PricingSql,
    PeriodsSql,
    ProjectsSql,
    CredentialsSql,
    SyncRunsSql,
)


def store_members() -> list[str]:
    """The names the ``Store`` protocol declares (its roles' and its own)."""
    return sorted(
        name
        for cls in Store.__mro__
        if cls.__module__.startswith("tally.store")
        for name in vars(cls)
        if not name.startswith("_")
    )


@pytest.mark.parametrize("cls", [*ROLES, SqlStore, SqlSteps, PgSteps, PgJsonPages], ids=lambda c: c.__name__)
def test_roles_and_the_assembly_inherit_nothing(cls: type) -> None:
    assert cls.__bases__ == (object,)


@pytest.mark.parametrize("cls", [SqliteDialect, PostgresDialect], ids=lambda c: c.__name__)
def test_a_backend_derives_from_the_seam_alone(cls: type) -> None:
    assert cls.__bases__ == (SqlDialect,)


def test_every_store_method_is_a_roles_bound_method(tmp_path: Path) -> None:
    stores = [SqliteStore(str(tmp_path / "tally.sqlite3")), PostgresStore("postgresql://127.0.0.1/unopened")]
    members = store_members()
    assert {"write_batch", "list_events", "sync_lock", "aclose", "create_api_token"} <= set(members)
    for store in stores:
        for name in members:
            method = getattr(store, name)
            assert inspect.ismethod(method), name
            assert not isinstance(method.__self__, SqlStore), name


def test_a_store_names_its_dialect_and_keeps_the_seam(tmp_path: Path) -> None:
    sqlite = SqliteStore(str(tmp_path / "tally.sqlite3"))
    postgres = PostgresStore("postgresql://127.0.0.1/unopened")
    assert (sqlite.dialect, postgres.dialect) == ("sqlite", "postgresql")
    assert isinstance(sqlite.seam, SqliteDialect) and isinstance(postgres.seam, PostgresDialect)
