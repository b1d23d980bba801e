"""Keystone tokens on the read routes, checked by the fake cloud's keystone: the authorization matrix.

Roles × scopes × routes: a project reader and a project member read their own project only; a token
of another project reads only that one; a domain reader reads the projects of its domain (naming one,
or grouped by project); an admin reads all of its cloud. No route answers a row of a project the
token may not read, and a refusal for a project the token cannot see says the same whether that
project exists or not. Malformed, unknown, revoked, expired and foreign tokens are 401; a keystone that
does not answer is 503 with Retry-After.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from keystone_support import CLOUD, KeystoneApi, keystone_api

from tally.store import Store

pytestmark = pytest.mark.anyio

WINDOW = "from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z"
LISTINGS = ("/api/v1/events", "/api/v1/resources", f"/api/v1/usage?{WINDOW}")


def projects_of(items: list[dict[str, Any]]) -> set[str]:
    return {item["project_id"] for item in items}


async def items(ks: KeystoneApi, path: str, token: str) -> list[dict[str, Any]]:
    answer = await ks.get(path, token)
    assert answer.status_code == 200, await answer.get_data()
    return list((await answer.get_json())["items"])


def joined(path: str, query: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}{query}"


@pytest.mark.parametrize("tenant", ["alpha_reader", "alpha_member"])
async def test_a_project_reader_or_member_reads_its_own_project_on_every_listing(
    store: Store, tmp_path: Path, tenant: str
) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant(tenant)
        for path in LISTINGS:
            assert projects_of(await items(ks, path, token)) == {ks.alpha}, path
            # Naming another project, or one that does not exist: the same refusal, word for word.
            other = await ks.get(joined(path, f"project_id={ks.beta}"), token)
            missing = await ks.get(joined(path, "project_id=no-such-project"), token)
            assert other.status_code == missing.status_code == 403
            assert (await other.get_json()) == (await missing.get_json())
            # Another cloud: its keystone is not this token's (and os-other takes none): 401.
            assert (await ks.get(joined(path, "cloud=os-other"), token)).status_code == 401


async def test_another_projects_token_reads_that_project_only(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("beta_member")
        for path in LISTINGS:
            assert projects_of(await items(ks, path, token)) == {ks.beta}, path
        grouped = await items(ks, f"/api/v1/usage?{WINDOW}&group_by=project_id", token)
        assert projects_of(grouped) == {ks.beta}


async def test_a_resource_of_another_project_is_not_found_like_a_missing_one(
    store: Store, tmp_path: Path
) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("alpha_reader")
        for tail in ("events", "lifecycle"):
            own = await ks.get(f"/api/v1/resources/{CLOUD}/instance/vm-a/{tail}", token)
            assert own.status_code == 200
            other = await ks.get(f"/api/v1/resources/{CLOUD}/instance/vm-b/{tail}", token)
            missing = await ks.get(f"/api/v1/resources/{CLOUD}/instance/vm-z/{tail}", token)
            assert other.status_code == missing.status_code == 404
            body_other, body_missing = await other.get_json(), await missing.get_json()
            assert body_other["detail"].replace("vm-b", "X") == body_missing["detail"].replace("vm-z", "X")


async def test_projects_routes_show_only_the_tokens_projects(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        created = {}
        for pid, name in ((ks.alpha, "alpha"), (ks.beta, "beta")):
            answer = await ks.api.post(
                "/api/v1/projects",
                json={"platform": "openstack", "cloud": CLOUD, "external_id": pid, "name": name},
            )
            created[pid] = (await answer.get_json())["id"]
        token = await ks.tenant("alpha_reader")
        listed = await items(ks, "/api/v1/projects", token)
        assert [p["external_id"] for p in listed] == [ks.alpha]
        assert (await ks.get(f"/api/v1/projects/{created[ks.alpha]}", token)).status_code == 200
        summary = await ks.get(f"/api/v1/projects/{created[ks.alpha]}/summary?{WINDOW}", token)
        assert summary.status_code == 200
        for tail in ("", "/summary?" + WINDOW):
            other = await ks.get(f"/api/v1/projects/{created[ks.beta]}{tail}", token)
            missing = await ks.get(f"/api/v1/projects/00000000-0000-0000-0000-000000000000{tail}", token)
            assert other.status_code == missing.status_code == 404
        admin = await ks.tenant("admin")
        assert {p["external_id"] for p in await items(ks, "/api/v1/projects", admin)} == {ks.alpha, ks.beta}


async def test_a_domain_reader_reads_each_project_of_its_domain(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("domain_reader")
        for path in LISTINGS:
            for project in (ks.alpha, ks.beta):
                assert projects_of(await items(ks, joined(path, f"project_id={project}"), token)) == {project}
            several = await ks.get(path, token)
            assert several.status_code == 403
        grouped = await items(ks, f"/api/v1/usage?{WINDOW}&group_by=project_id,resource_type", token)
        assert projects_of(grouped) == {ks.alpha, ks.beta}
        assert len(grouped) == 4, grouped  # a subtotal per project and type
        csv = await ks.api.client.get(
            f"/api/v1/usage?{WINDOW}&group_by=project_id",
            headers={"X-Auth-Token": token, "Accept": "text/csv"},
        )
        lines = (await csv.get_data(as_text=True)).strip().splitlines()
        # The header, then a line per type and project (the export's lines always name the type).
        assert csv.status_code == 200 and len(lines) == 5, lines
        assert {line.split(",")[1] for line in lines[1:]} == {ks.alpha, ks.beta}


async def test_an_admin_reads_every_project_of_its_cloud(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("admin")
        for path in LISTINGS:
            assert projects_of(await items(ks, path, token)) == {ks.alpha, ks.beta}, path


async def test_routes_outside_the_policy_and_writes_refuse_keystone_tokens(
    store: Store, tmp_path: Path
) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("admin")
        for path in (
            "/api/v1/stats/resources",
            "/api/v1/stats/events",
            "/api/v1/sync-runs",
            "/api/v1/rejected-events",
        ):
            assert (await ks.get(path, token)).status_code == 403, path
        answer = await ks.api.client.post(
            "/api/v1/projects",
            headers={"X-Auth-Token": token},
            json={"platform": "openstack", "cloud": CLOUD, "external_id": "x"},
        )
        assert answer.status_code == 403
        observer = await ks.tenant("alpha_observer")
        refused = await ks.get("/api/v1/events", observer)
        assert refused.status_code == 403
        assert "tally:events:list" in (await refused.get_json())["detail"]


async def test_bearer_keystone_tokens_are_taken_beside_tally_tokens(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("alpha_reader")
        answer = await ks.api.client.get("/api/v1/events", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200
        assert projects_of((await answer.get_json())["items"]) == {ks.alpha}
        # A Tally token is still Tally's.
        assert (await ks.api.get("/api/v1/events")).status_code == 200
        assert (await ks.api.get("/api/v1/events", "tly_unknown")).status_code == 401


@pytest.mark.parametrize("token", ["not-a-token", "x" * 9000, "caf\u00e9"])
async def test_malformed_and_unknown_tokens_are_401_problems(
    store: Store, tmp_path: Path, token: str
) -> None:
    async with keystone_api(store, tmp_path) as ks:
        answer = await ks.api.client.get(
            "/api/v1/events", headers={"X-Auth-Token": token.encode().decode("latin-1")}
        )
        assert answer.status_code == 401
        assert answer.headers["Content-Type"] == "application/problem+json"


async def test_a_revoked_token_is_refused_once_the_cache_lets_it_go(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path, cache_s=0) as ks:
        token = await ks.tenant("alpha_reader")
        assert (await ks.get("/api/v1/events", token)).status_code == 200
        await ks.revoke(token)
        answer = await ks.get("/api/v1/events", token)
        assert answer.status_code == 401
        assert (await answer.get_json())["type"] == "urn:tally:error:unauthorized"


async def test_a_revoked_token_stands_within_the_cache_bound(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path, cache_s=300) as ks:
        token = await ks.tenant("alpha_reader")
        assert (await ks.get("/api/v1/events", token)).status_code == 200
        await ks.revoke(token)
        # Within the bound the cached answer stands (keystonemiddleware's token_cache_time).
        assert (await ks.get("/api/v1/events", token)).status_code == 200


async def test_an_expired_token_is_refused_even_when_cached(store: Store, tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    import anyio

    from tally.simulator.fakecloud._keystone import Token

    async with keystone_api(store, tmp_path, cache_s=300) as ks:
        user = next(u for u in ks.fake.accounts.tenants if u.name == "alpha_reader")
        short = Token(user, ks.alpha, False, None, datetime.now(UTC) + timedelta(seconds=1.5), ("password",))
        token = ks.fake.accounts.issue(short)
        assert (await ks.get("/api/v1/events", token)).status_code == 200
        await anyio.sleep(2)
        answer = await ks.get("/api/v1/events", token)
        assert answer.status_code == 401
        assert "expired" in (await answer.get_json())["detail"]


async def test_a_token_of_another_keystone_is_401(store: Store, tmp_path: Path) -> None:
    async with (
        keystone_api(store, tmp_path / "one") as one,
        keystone_api(store, tmp_path / "two", seed=False) as two,
    ):
        foreign = await two.tenant("alpha_reader")
        assert (await one.get("/api/v1/events", foreign)).status_code == 401
        # And a cloud that takes no keystone token refuses every one.
        assert (await one.get("/api/v1/events?cloud=os-other", foreign)).status_code == 401


async def test_a_keystone_that_does_not_answer_is_503_with_retry_after(store: Store, tmp_path: Path) -> None:
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("alpha_reader")
        ks.fake.faults.down.add("identity")
        answer = await ks.get("/api/v1/events", token)
        assert answer.status_code == 503
        assert answer.headers["Retry-After"] == "5"
        assert answer.headers["Content-Type"] == "application/problem+json"
        ks.fake.faults.down.discard("identity")
        assert (await ks.get("/api/v1/events", token)).status_code == 200


async def test_a_slow_keystone_is_503_within_the_timeout(store: Store, tmp_path: Path) -> None:
    import time

    from keystone_support import checker

    from tally.http.internals import KeystoneTokens, TallyPolicy

    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("alpha_reader")
        assert ks.api.services is not None and ks.api.services.keystone is not None
        quick = KeystoneTokens({CLOUD: checker(ks.clouds_yaml, timeout_s=0.5)}, TallyPolicy(), cache_s=60)
        object.__setattr__(ks.api.services, "keystone", quick)
        ks.fake.faults.slow["identity"] = 5.0
        started = time.monotonic()
        answer = await ks.get("/api/v1/events", token)
        assert answer.status_code == 503
        assert time.monotonic() - started < 3


async def test_metrics_count_checks_hits_and_refusals_and_no_token_is_ever_written(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from prometheus_client import REGISTRY, generate_latest

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    caplog.set_level("DEBUG")
    async with keystone_api(store, tmp_path) as ks:
        token = await ks.tenant("alpha_reader")
        valid = sample("tally_keystone_validations_total", cloud=CLOUD, outcome="valid")
        hits = sample("tally_keystone_cache_hits_total", cloud=CLOUD)
        unknown = sample("tally_keystone_refusals_total", reason="not_found")
        malformed = sample("tally_keystone_refusals_total", reason="malformed")
        for _ in range(3):
            assert (await ks.get("/api/v1/events", token)).status_code == 200
        assert (await ks.get("/api/v1/events", "gAAAAAunknown-token-value")).status_code == 401
        assert (await ks.get("/api/v1/events", "bad token\x7f")).status_code == 401
        assert sample("tally_keystone_validations_total", cloud=CLOUD, outcome="valid") == valid + 1
        assert sample("tally_keystone_cache_hits_total", cloud=CLOUD) == hits + 2
        assert sample("tally_keystone_refusals_total", reason="not_found") == unknown + 1
        assert sample("tally_keystone_refusals_total", reason="malformed") == malformed + 1
        exposition = generate_latest(REGISTRY).decode()
        # Every line but the test's own client's (httpx): Tally's, keystoneauth's, requests'.
        logged = "\n".join(
            r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))
        )
        assert "GET /v3/auth/tokens" in logged  # the checks were logged at DEBUG, without the token
        for secret in (token, "gAAAAAunknown-token-value"):
            assert secret not in exposition
            assert secret not in logged


async def test_even_an_admins_token_reads_only_its_own_clouds_rows(store: Store, tmp_path: Path) -> None:
    from http_support import event

    from tally.store import hash_secret

    async with keystone_api(store, tmp_path) as ks:
        await store.create_ingest_credential(
            platform="openstack", cloud="os-other", token_hash=hash_secret("other")
        )
        posted = await ks.api.post(
            "/api/v1/events", "other", json=[event("vm-o", cloud="os-other", project_id=ks.alpha)]
        )
        assert (await posted.get_json())["accepted"] == 1
        await ks.api.post(
            "/api/v1/projects",
            json={"platform": "openstack", "cloud": "os-other", "external_id": ks.alpha, "name": "elsewhere"},
        )
        token = await ks.tenant("admin")
        for path in (*LISTINGS, "/api/v1/projects"):
            answer = await ks.get(path, token)
            assert answer.status_code == 200, path
            assert {item["cloud"] for item in (await answer.get_json())["items"] if "cloud" in item} <= {
                CLOUD
            }, path
        events = await items(ks, "/api/v1/events", token)
        assert "vm-o" not in {e["resource_id"] for e in events}
        reader = await ks.tenant("alpha_reader")
        # The same project id in another cloud is another project: not the token's.
        assert "vm-o" not in {e["resource_id"] for e in await items(ks, "/api/v1/events", reader)}
        other = await ks.get("/api/v1/resources/os-other/instance/vm-o/lifecycle", reader)
        assert other.status_code == 401  # os-other takes no keystone token: this token is foreign there
