"""Through the Reporting API: --register-projects, and compare reading the stored lifecycles over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from quart import Quart

from tally.config import Settings
from tally.core import deterministic_event_id, format_instant
from tally.http import ReportingServices, create_reporting_app
from tally.ingest import IngestPipeline
from tally.simulator import compare, generate_month
from tally.simulator.register import RegisterError, register_projects
from tally.simulator.stored import lifecycles_from_api
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


async def test_compare_over_the_api_names_the_resources_that_differ(store: Store) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    transport = httpx.ASGITransport(app=app_of(store))
    # Book one instance of the oracle exactly, and nothing else.
    resource = next(
        r
        for r in month.oracle.resources
        if r.resource_type == "instance" and len(r.intervals) == 1 and r.intervals[0].end == month.period_to
    )
    first = resource.intervals[0]
    event = {
        "event_id": deterministic_event_id(
            "openstack", "os-sim", resource.resource_id, "compute.instance.create.end", first.start
        ),
        "timestamp": format_instant(first.start),
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": "os-sim",
        "resource_type": "instance",
        "resource_id": resource.resource_id,
        "project_id": first.project_id,
        "payload": {"state": first.state, "size": dict(first.size)},
    }
    result = await IngestPipeline(store, require_size_schema=False).ingest([event])
    assert result.accepted == 1, result.to_json()

    stored = await lifecycles_from_api("http://api", ADMIN, "os-sim", transport=transport)
    assert set(stored) == {("instance", resource.resource_id)}
    comparison = compare(month.oracle, stored, sync_interval=timedelta(hours=1))
    assert not comparison.passed
    differing = {r.resource_id: r for r in comparison.resources}
    assert resource.resource_id not in differing
    assert len(differing) == len(month.oracle.resources) - 1
