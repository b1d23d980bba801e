"""Through the Reporting API: --register-projects, and compare refusing --api (it serves no sync runs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from quart import Quart

from tally.config import Settings
from tally.core import format_instant
from tally.daemon.cli import main
from tally.http import ReportingServices, create_reporting_app
from tally.ingest import IngestPipeline
from tally.simulator import generate_month
from tally.simulator.register import RegisterError, register_projects
from tally.store import Store, hash_secret, open_store

pytestmark = pytest.mark.anyio
ADMIN = "sim-admin-secret"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with open_store(f"sqlite:///{tmp_path / 'api.sqlite3'}") as opened:
        await opened.migrate_up()
        await opened.create_api_token(token_hash=hash_secret(ADMIN), role="admin")
        yield opened


def app_of(store: Store) -> Quart:
    settings = Settings(reporting_internal_token=SecretStr("internal"))
    services = ReportingServices(
        store=store, pipeline=IngestPipeline(store, require_size_schema=False), settings=settings
    )
    return create_reporting_app(services)


async def test_register_projects_creates_tenants_gardener_projects_and_relations(store: Store) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    transport = httpx.ASGITransport(app=app_of(store))

    async def run() -> tuple[int, int, int]:
        done = await register_projects(
            "http://api",
            ADMIN,
            month.tenants,
            cloud="os-sim",
            garden_cloud="garden-sim",
            valid_from=month.period_from,
            transport=transport,
        )
        return done.projects, done.created, done.relations

    gardens = [t for t in month.tenants if t.gardener_project]
    assert await run() == (len(month.tenants) + len(gardens), len(month.tenants) + len(gardens), len(gardens))
    # A second run finds everything there and registers nothing twice.
    assert await run() == (len(month.tenants) + len(gardens), 0, 0)

    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        listed = (
            await client.get("/api/v1/projects", params={"cloud": "garden-sim"}, headers=headers)
        ).json()
        assert sorted(p["external_id"] for p in listed["items"]) == sorted(
            t.gardener_project for t in gardens
        )
        alpha = next(p for p in listed["items"] if p["external_id"] == "alpha")
        relations = (await client.get(f"/api/v1/projects/{alpha['id']}/relations", headers=headers)).json()
        (relation,) = relations["items"]
        assert relation["relation_type"] == "infrastructure_tenant"
        assert relation["valid_from"] == format_instant(month.period_from)


async def test_register_refuses_one_cloud_for_both(store: Store) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    with pytest.raises(RegisterError, match="must differ"):
        await register_projects(
            "http://api", ADMIN, month.tenants, cloud="x", garden_cloud="x", valid_from=month.period_from
        )


def test_compare_over_the_api_refuses_for_want_of_sync_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    oracle = tmp_path / "oracle.json"
    oracle.write_bytes(month.oracle.to_json())
    assert main(["simulator", "compare", "--oracle", str(oracle), "--api", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "serves no sync runs" in err and "--store-url" in err and err.count("\n") == 1
