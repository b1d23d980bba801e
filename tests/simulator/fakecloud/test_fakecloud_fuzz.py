"""No query makes the fake answer 500: malformed parameters get a 4xx, unknown ones are ignored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from fakecloud_support import small_world
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tally.simulator import create_fake_cloud_app
from tally.simulator.fakecloud._keystone import Token

pytestmark = pytest.mark.anyio

WORLD = small_world()
APP = create_fake_cloud_app(WORLD)
NAMES = [
    "limit", "marker", "changes-since", "all_tenants", "deleted", "project_id", "tenant_id", "is_public",
    "visibility", "os_hidden", "owner", "sort", "sort_key", "page_reverse", "colour", "",
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(["", "-1", "0", "1", "1000", "None", "true", "yesterday", "2026-07-02T00:00:00Z", "all"]),
    st.sampled_from([r.resource_id for r in WORLD.resources]),
    st.text(max_size=12),
)
PATHS = [
    "/compute/v2.1/servers/detail",
    "/compute/v2.1/flavors/detail",
    "/volume/v3/volumes/detail",
    "/volume/v3/types",
    "/network/v2.0/floatingips",
    "/image/v2/images",
    "/load-balancer/v2/lbaas/loadbalancers",
]
VERSIONS = st.sampled_from(
    ["", "compute 2.1", "compute 2.47", "compute latest", "compute 2.x", "volume 3.63", "x"]
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(PATHS),
    query=st.lists(st.tuples(st.sampled_from(NAMES), VALUES), max_size=5),
    version=VERSIONS,
    admin=st.booleans(),
)
async def test_no_query_makes_it_500(
    path: str, query: list[tuple[str, str]], version: str, admin: bool
) -> None:
    state = APP.config["FAKE_CLOUD"]
    user = state.accounts.admin if admin else state.accounts.member
    token = state.accounts.issue(
        Token(user, user.project_id, admin, None, datetime.now(UTC) + timedelta(hours=1))
    )
    headers = {"X-Auth-Token": token}
    if version:
        headers["OpenStack-API-Version"] = version
    client = APP.test_client()
    answer = await client.get(f"{path}?{urlencode(query)}", headers=headers)
    assert answer.status_code < 500, (path, query, await answer.get_data())
