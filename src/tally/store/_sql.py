"""The store both backends are: one object per role of the shared SQL, assembled over a dialect.

The shared SQL is written once, one role per module, each a class that holds the dialect seam
(``_sql_dialect.SqlDialect``: transactions, conversions, fetch helpers) rather than inheriting it:
``_sql_schema`` (migrations), ``_sql_events`` (reads of the events table), ``_sql_projection``
(current_resources), ``_sql_ingest`` (writing a batch and folding it, through the dialect's
``WriteSteps``: ``_sql_steps`` for SQLite, ``_pg_steps`` for PostgreSQL), ``_sql_audit`` (rejected
events, audit log), ``_sql_catalog`` (size names, resource types), ``_sql_pricing`` (price lists),
``_sql_periods`` (billing periods), ``_sql_projects`` (projects and relations), ``_sql_credentials``
(tokens, ingest credentials), ``_sql_sync`` (sync runs and receipts); ``_sql_text`` holds the pure
statement text they share. Statements use ``?`` placeholders; the PostgreSQL backend rewrites them.

``SqlStore`` builds the roles over one dialect and exposes every ``Store`` method as the role's
own bound method, grouped per role below: a call goes straight to the role, with no frame of its
own here. A backend is a dialect (``_sqlite.SqliteDialect``, ``_postgres.PostgresDialect``) and
the function that assembles a ``SqlStore`` over it (``SqliteStore``, ``PostgresStore``). The store
keeps the dialect as ``seam`` (the PostgreSQL upkeep reaches its partitions through it: ``_upkeep``)
and its name as ``dialect``.
"""

from __future__ import annotations

from ._sql_audit import AuditSql
from ._sql_catalog import CatalogSql
from ._sql_credentials import CredentialsSql
from ._sql_dialect import SqlDialect
from ._sql_events import EventsSql
from ._sql_ingest import IngestSql
from ._sql_periods import PeriodsSql
from ._sql_pricing import PricingSql
from ._sql_projection import ProjectionSql
from ._sql_projects import ProjectsSql
from ._sql_schema import SchemaSql
from ._sql_sync import SyncRunsSql


class SqlStore:
    """Every ``Store`` method, each a role's (see the module docstring)."""

    def __init__(self, seam: SqlDialect) -> None:
        self.seam = seam
        self.dialect = seam.dialect  # "sqlite" or "postgresql", as the backends always said
        steps = seam.write_steps()
        schema = SchemaSql(seam)
        events = EventsSql(seam)
        projection = ProjectionSql(seam, events, steps)
        audit = AuditSql(seam)
        ingest = IngestSql(events, audit, steps)
        catalog = CatalogSql(seam)
        pricing = PricingSql(seam)
        periods = PeriodsSql(seam)
        projects = ProjectsSql(seam)
        credentials = CredentialsSql(seam, audit)
        sync_runs = SyncRunsSql(seam)
        self._bind_record_roles(seam, schema, ingest, events, projection)
        self._bind_registry_roles(seam, catalog, pricing, periods, projects, audit, credentials, sync_runs)

    def _bind_record_roles(
        self,
        seam: SqlDialect,
        schema: SchemaSql,
        ingest: IngestSql,
        events: EventsSql,
        projection: ProjectionSql,
    ) -> None:
        json_pages = seam.json_pages(events, projection)

        # -- lifetime (the dialect's) -----------------------------------------------------------------
        self.open = seam.open
        self.aclose = seam.aclose

        # -- SchemaRole -------------------------------------------------------------------------------
        self.migrate_up = schema.migrate_up
        self.migrate_down = schema.migrate_down
        self.schema_status = schema.schema_status
        self.write_check = seam.write_check

        # -- IngestRole -------------------------------------------------------------------------------
        self.write_batch = ingest.write_batch
        self.open_batch = ingest.open_batch

        # -- EventsRole -------------------------------------------------------------------------------
        self.list_events = events.list_events
        self.resource_history = events.resource_history
        self.lifecycle_events = events.lifecycle_events
        self.histories = events.histories
        self.event_stats = events.event_stats
        self.usage_histories = events.usage_histories
        self.open_usage_stream = events.open_usage_stream

        # -- ProjectionRole ---------------------------------------------------------------------------
        self.get_resource = projection.get_resource
        self.list_resources = projection.list_resources
        self.resource_stats = projection.resource_stats
        self.resources_of_cloud = projection.resources_of_cloud
        self.sync_rows = projection.sync_rows
        self.current_resource_counts = projection.current_resource_counts
        self.rebuild_projection = projection.rebuild_projection

        # -- PagesRole (PostgreSQL's built by the database, see ``_pg_pages``) ------------------------
        self.list_events_json = events.list_events_json if json_pages is None else json_pages.list_events_json
        self.list_resources_json = (
            projection.list_resources_json if json_pages is None else json_pages.list_resources_json
        )

    def _bind_registry_roles(
        self,
        seam: SqlDialect,
        catalog: CatalogSql,
        pricing: PricingSql,
        periods: PeriodsSql,
        projects: ProjectsSql,
        audit: AuditSql,
        credentials: CredentialsSql,
        sync_runs: SyncRunsSql,
    ) -> None:

        # -- CatalogRole: resource types and size names ------------------------------------------------
        self.get_resource_type = catalog.get_resource_type
        self.list_resource_types = catalog.list_resource_types
        self.put_resource_type = catalog.put_resource_type
        self.size_names = catalog.size_names
        self.learn_size_names = catalog.learn_size_names

        # -- BillingRole: price lists and billing periods ---------------------------------------------
        self.put_price_list = pricing.put_price_list
        self.get_price_list = pricing.get_price_list
        self.list_price_lists = pricing.list_price_lists
        self.close_period = periods.close_period
        self.get_period = periods.get_period
        self.list_periods = periods.list_periods
        self.period_lines = periods.period_lines
        self.add_period_corrections = periods.add_period_corrections
        self.deliver_corrections = periods.deliver_corrections

        # -- ProjectsRole -----------------------------------------------------------------------------
        self.create_project = projects.create_project
        self.get_project = projects.get_project
        self.find_project = projects.find_project
        self.list_projects = projects.list_projects
        self.update_project = projects.update_project
        self.create_relation = projects.create_relation
        self.get_relation = projects.get_relation
        self.list_relations = projects.list_relations
        self.relations_at = projects.relations_at
        self.relations_between = projects.relations_between
        self.update_relation = projects.update_relation
        self.end_relation = projects.end_relation

        # -- AuditRole --------------------------------------------------------------------------------
        self.list_rejected = audit.list_rejected
        self.audit = audit.audit
        self.list_audit = audit.list_audit

        # -- CredentialsRole --------------------------------------------------------------------------
        self.create_ingest_credential = credentials.create_ingest_credential
        self.ingest_credential_by_hash = credentials.ingest_credential_by_hash
        self.list_ingest_credentials = credentials.list_ingest_credentials
        self.revoke_ingest_credential = credentials.revoke_ingest_credential
        self.create_api_token = credentials.create_api_token
        self.api_token_by_hash = credentials.api_token_by_hash
        self.list_api_tokens = credentials.list_api_tokens
        self.revoke_api_token = credentials.revoke_api_token
        self.shared_secret = credentials.shared_secret

        # -- SyncRecordsRole --------------------------------------------------------------------------
        self.start_sync_run = sync_runs.start_sync_run
        self.finish_sync_run = sync_runs.finish_sync_run
        self.last_completed_sync_started_at = sync_runs.last_completed_sync_started_at
        self.fail_stale_sync_runs = sync_runs.fail_stale_sync_runs
        self.get_sync_run = sync_runs.get_sync_run
        self.list_sync_runs = sync_runs.list_sync_runs
        self.sync_runs_between = sync_runs.sync_runs_between
        self.newest_receipt = sync_runs.newest_receipt
        self.sync_receipts = sync_runs.sync_receipts
        self.late_keys = sync_runs.late_keys
        self.sync_lock = seam.sync_lock
