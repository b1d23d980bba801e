"""Settings: every ``TALLY_*`` variable, its default and its allowed range.

One frozen object, read once at startup. Secrets are ``SecretStr`` so that no
repr, log line or ``tally config show`` can print them; each also takes a
``_FILE`` variant naming a file that holds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """The daemon's configuration; field ``x`` is the variable ``TALLY_X``."""

    model_config = SettingsConfigDict(env_prefix="TALLY_", frozen=True, extra="ignore", case_sensitive=False)

    # -- process -------------------------------------------------------------------------------------
    state_dir: Path = Path("./tally-state")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["plain", "json"] = "plain"
    metrics_enabled: bool = True
    shutdown_grace_s: float = Field(10.0, ge=0, le=3600)

    # -- Reporting API -------------------------------------------------------------------------------
    reporting_enabled: bool = True
    reporting_http_addr: str = "127.0.0.1"
    reporting_http_port: int = Field(8080, ge=0, le=65535)
    # 0: from the host (the daemon's ``default_http_workers``: the CPUs it may run on, at most 4, on
    # PostgreSQL; 1 on SQLite).
    reporting_http_workers: int = Field(0, ge=0, le=64)
    reporting_db_url: SecretStr | None = None
    reporting_db_max_conns: int = Field(10, ge=1, le=1000)
    reporting_db_start_timeout_s: int = Field(300, ge=0, le=86400)
    reporting_migrate_on_start: bool = True
    reporting_auth_mode: Literal["enforced", "disabled"] = "enforced"
    reporting_internal_token: SecretStr | None = None
    reporting_unhealthy_threshold_s: int = Field(600, ge=1, le=86400)
    reporting_oidc_jwks_url: str | None = None
    ingest_require_size_schema: bool = False
    reporting_attributing_relation_types: str = "infrastructure_tenant"
    reporting_clouds_config: Path | None = None
    reporting_policy_file: Path | None = None
    reporting_keystone_cache_s: int = Field(300, ge=0, le=86400)
    reporting_keystone_timeout_s: float = Field(5.0, gt=0, le=120)
    reporting_sync_allow_at: bool = False
    reporting_sync_budget_s: int = Field(45, ge=1, le=86400)
    reporting_sync_settle_s: int = Field(60, ge=0, le=3600)
    reporting_sync_clock_url: str | None = None
    # The PostgreSQL sync lock's lease: a holder that stops renewing loses its clouds' locks after it.
    reporting_sync_lock_lease_s: float = Field(60.0, ge=3, le=3600)
    # 0: derived from the pool and the cloud count (reconcile's ``default_max_concurrent``).
    reporting_sync_max_concurrent: int = Field(0, ge=0, le=1000)
    reporting_metrics_refresh_s: int = Field(60, ge=1, le=86400)

    # -- billing periods (docs/invoicing.md) -----------------------------------------------------------
    billing_price_list: str | None = Field(None, min_length=1, max_length=64)
    billing_grace_hours: int = Field(72, ge=0, le=8760)
    billing_close_interval_s: int = Field(3600, ge=60, le=86400)

    # -- events partitions and retention (PostgreSQL) --------------------------------------------------
    events_partitions_ahead: int = Field(2, ge=1, le=24)
    events_maintenance_interval_s: int = Field(3600, ge=60, le=86400)
    events_retention_months: int | None = Field(None, ge=1, le=1200)
    events_retention_drop: bool = False

    # -- collector (oslo notifications) ---------------------------------------------------------------
    osc_amqp_url: SecretStr | None = None
    osc_exchanges: str = "nova,neutron,openstack,glance,octavia"
    osc_topics: str = "notifications.info"
    osc_queue_name: str = "tally-notifications"
    osc_queue_type: Literal["classic", "quorum"] = "classic"
    osc_require_exchanges: bool = False
    osc_durable_exchanges: bool = False
    osc_broker_definitions: bool = False
    osc_cloud: str = "os-sim"
    osc_reporting_url: str | None = None
    osc_reporting_insecure: bool = False
    osc_token: SecretStr | None = None
    osc_buffer_path: Path | None = None
    osc_http_addr: str = "127.0.0.1"
    osc_http_port: int = Field(9090, ge=0, le=65535)
    osc_batch_max: int = Field(500, ge=1, le=1000)
    osc_flush_interval_s: float = Field(5.0, gt=0, le=3600)
    osc_buffer_max_events: int = Field(1_000_000, ge=10, le=100_000_000)
    osc_prefetch: int = Field(100, ge=1, le=65535)
    osc_unhealthy_threshold_s: int = Field(600, ge=1, le=86400)

    # -- simulator ------------------------------------------------------------------------------------
    sim_amqp_url: SecretStr | None = None
    sim_http_addr: str = "127.0.0.1"
    sim_http_port: int = Field(8091, ge=0, le=65535)
    sim_cloud: str = "os-sim"
    sim_garden_cloud: str = "garden-sim"
    sim_reporting_url: str | None = None
    sim_api_token: SecretStr | None = None
    sim_otlp_endpoint: str | None = None

    @property
    def store_url(self) -> str:
        """The store to open: the configured URL, else the embedded SQLite file in the state directory."""
        if self.reporting_db_url is not None:
            return self.reporting_db_url.get_secret_value()
        return f"sqlite:///{(self.state_dir / 'tally.sqlite3').resolve()}"

    @property
    def outbox_path(self) -> Path:
        return self.osc_buffer_path if self.osc_buffer_path is not None else self.state_dir / "outbox.sqlite3"
