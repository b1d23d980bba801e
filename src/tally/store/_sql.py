"""The SQL both backends share: every Store method written once against a small dialect seam.

A backend supplies transactions (``_tx``), the conversion of instants, JSON and
id lists to and from its column types, the time-bucket expression, how a
migration file is run, and its sync lock (the seam is ``_sql_base.SqlBase``).
Statements use ``?`` placeholders; the PostgreSQL backend rewrites them. The
ingest steps (``_upsert_rows``, ``_lock_keys``) are seams too, and PostgreSQL
writes a whole batch its own way (``write_batch``), as arrays in pipeline mode.

``SqlStore`` only assembles the methods, one module per concern:
``_sql_ingest`` (writing a batch and folding it), ``_sql_events`` (the events
table), ``_sql_projection`` (current_resources), ``_sql_sync`` (sync runs and
receipts), ``_sql_projects`` (projects and relations), ``_sql_audit`` (rejected
events, audit log), ``_sql_catalog`` (size names, resource types),
``_sql_credentials`` (tokens, ingest credentials), ``_sql_pricing`` (price lists),
``_sql_periods`` (billing periods); ``_sql_text`` holds the pure statement text they share.
"""

from __future__ import annotations

from ._sql_catalog import CatalogSql
from ._sql_credentials import CredentialsSql
from ._sql_ingest import IngestSql
from ._sql_periods import PeriodsSql
from ._sql_pricing import PricingSql
from ._sql_projects import ProjectsSql
from ._sql_sync import SyncRunsSql


class SqlStore(IngestSql, CatalogSql, ProjectsSql, SyncRunsSql, CredentialsSql, PricingSql, PeriodsSql):
    """Every Store method over the dialect seam; see the module docstring."""
