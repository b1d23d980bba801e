"""Through the Reporting API: --register-projects, and compare reading events and sync runs over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from quart import Quart

from tally.cli import main
from tally.config import Settings
from tally.core import format_instant
from tally.http import ReportingServices, create_reporting_app
from tally.ingest import IngestPipeline
from tally.simulation.register import RegisterError, register_projects
from tally.simulation.simulate import SimulateOptions, simulate
from tally.simulation.stored import StoredReadError, record_from_api, record_from_store_url
from tally.simulator import compare, generate_month
from tally.simulator._platform import platform_created
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


async def test_compare_over_the_api_judges_what_the_store_judges(tmp_path: Path) -> None:
    faults = frozenset({"missing-create", "held-back", "missing-delete", "lost-update"})
    month = generate_month(3, "2026-07", scale=0.3, days=3, faults=faults)
    options = SimulateOptions(
        seed=3, period="2026-07", scale=0.3, days=3, faults=faults, factor=0.0, state_dir=tmp_path
    )
    result = await simulate(options, month=month)
    direct = await record_from_store_url(result.store_url, month.cloud)
    async with open_store(result.store_url) as store:
        await store.create_api_token(token_hash=hash_secret(ADMIN), role="admin")
        await store.create_api_token(token_hash=hash_secret("reader"), role="read_all")
        transport = httpx.ASGITransport(app=app_of(store))
        served = await record_from_api("http://api", ADMIN, month.cloud, transport=transport)
        with pytest.raises(StoredReadError, match="need an admin token"):
            await record_from_api("http://api", "reader", month.cloud, transport=transport)
    assert served.runs == direct.runs and len(served.runs) > 10
    assert served.histories == direct.histories
    judged = [
        compare(month.oracle, r, settle=timedelta(0), platform_created=platform_created(month.world))
        for r in (served, direct)
    ]
    assert judged[0].to_doc() == judged[1].to_doc()
    assert judged[0].passed and judged[0].tolerated_by_cause.get("poll-dated update")


def test_compare_over_an_api_that_is_not_there_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    oracle = tmp_path / "oracle.json"
    oracle.write_bytes(month.oracle.to_json())
    argv = ["simulator", "compare", "--oracle", str(oracle), "--api", "http://127.0.0.1:9", "--token", "t"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "GET /api/v1/sync-runs" in err and err.count("\n") == 1
