"""Token lifecycle through the commands an operator runs: create (with an expiry), list, revoke; the API
refuses a revoked or expired secret on the very next request, and each step leaves an audit row."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from http_support import Api, build_api, event

from tally.cli import tokens as commands
from tally.cli.tokens import ExpiryError, parse_expiry, render_table
from tally.core import utc_now
from tally.store import Store, hash_secret

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tally")
    commands.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


async def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = parse(argv)
    code = await args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def cli_api(store_url: str, store: Store, monkeypatch: pytest.MonkeyPatch) -> Api:
    """The app and the commands on one store, as an operator runs them beside the daemon."""
    monkeypatch.setenv("TALLY_REPORTING_DB_URL", store_url)
    return await build_api(store, seed=False)


def test_expiry_as_a_duration_or_an_instant() -> None:
    assert parse_expiry("90d", NOW) == NOW + timedelta(days=90)
    assert parse_expiry("12h", NOW) == NOW + timedelta(hours=12)
    assert parse_expiry(" 30m", NOW) == NOW + timedelta(minutes=30)
    assert parse_expiry("3600s", NOW) == NOW + timedelta(hours=1)
    assert parse_expiry("2026-03-02T00:00:00+01:00", NOW) == datetime(2026, 3, 1, 23, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("0d", "not in the future"),
        ("2026-03-01T12:00:00Z", "not in the future"),
        ("2026-01-01T00:00:00Z", "not in the future"),
        ("999999d", "more than 3660 days away"),
        ("tomorrow", "neither a duration"),
        ("2027-01-01", "neither a duration"),
        ("5w", "neither a duration"),
        ("-1d", "neither a duration"),
    ],
)
def test_a_bad_expiry_is_one_line_naming_it(given: str, message: str) -> None:
    with pytest.raises(ExpiryError, match=message) as caught:
        parse_expiry(given, NOW)
    assert repr(given) in str(caught.value) and "\n" not in str(caught.value)


def test_table_aligns_columns_and_marks_absent_values() -> None:
    rows = [{"id": "a", "project_ids": [], "n": None}, {"id": "bbbb", "project_ids": ["p", "q"], "n": 3}]
    assert render_table(rows, ("id", "project_ids", "n")).splitlines() == [
        "id    project_ids  n",
        "a     -            -",
        "bbbb  p,q          3",
    ]


async def test_revoked_token_is_refused_on_the_next_request(
    cli_api: Api, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, secret, err = await run(["token", "create", "--role", "read_all", "--expires", "30d"], capsys)
    assert code == 0 and "expires=" in err
    secret = secret.strip()
    assert (await cli_api.get("/api/v1/resources", secret)).status_code == 200
    code, out, _ = await run(["token", "list", "--json"], capsys)
    (listed,) = json.loads(out)
    assert listed["status"] == "active" and listed["role"] == "read_all" and secret not in out
    code, _, err = await run(["token", "revoke", listed["id"]], capsys)
    assert code == 0 and "revoked api token" in err
    refused = await cli_api.get("/api/v1/resources", secret)
    assert refused.status_code == 401
    assert "revoked or expired" in (await refused.get_json())["detail"]
    code, _, err = await run(["token", "revoke", listed["id"]], capsys)
    assert code == 1 and "already revoked" in err
    code, out, _ = await run(["token", "list"], capsys)
    assert out.splitlines()[0].split() == [
        "id",
        "role",
        "project_ids",
        "status",
        "created_at",
        "expires_at",
        "revoked_at",
        "description",
    ]
    assert listed["id"] in out and "revoked" in out.splitlines()[1]
    actions = [(r.action, r.object_id) for r in await store.list_audit()]
    assert actions == [("api_token.revoke", listed["id"]), ("api_token.create", listed["id"])]
    assert all(r.actor.startswith("cli:") for r in await store.list_audit())


async def test_revoked_ingest_credential_is_refused_on_the_next_batch(
    cli_api: Api, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ingest-credential", "create", "--platform", "openstack", "--cloud", "os-dev"]
    code, secret, _ = await run(argv, capsys)
    assert code == 0
    secret = secret.strip()
    assert (await cli_api.post("/api/v1/events", secret, json=[event()])).status_code == 200
    _, out, _ = await run(["ingest-credential", "list", "--json"], capsys)
    (listed,) = json.loads(out)
    assert (listed["platform"], listed["cloud"], listed["status"]) == ("openstack", "os-dev", "active")
    assert (await run(["ingest-credential", "revoke", listed["id"]], capsys))[0] == 0
    refused = await cli_api.post("/api/v1/events", secret, json=[event("vm-2")])
    assert refused.status_code == 401
    assert [r.action for r in await store.list_audit()] == [
        "ingest_credential.revoke",
        "ingest_credential.create",
    ]


async def test_expired_secrets_are_refused_from_their_expiry_on(cli_api: Api, store: Store) -> None:
    expires = utc_now() + timedelta(seconds=0.5)
    await store.create_api_token(token_hash=hash_secret("soon"), role="read_all", expires_at=expires)
    await store.create_ingest_credential(
        platform="openstack", cloud="os-dev", token_hash=hash_secret("soon-in"), expires_at=expires
    )
    assert (await cli_api.get("/api/v1/resources", "soon")).status_code == 200
    assert (await cli_api.post("/api/v1/events", "soon-in", json=[event()])).status_code == 200
    await anyio.sleep((expires - utc_now()).total_seconds() + 0.05)
    assert (await cli_api.get("/api/v1/resources", "soon")).status_code == 401
    assert (await cli_api.post("/api/v1/events", "soon-in", json=[event("vm-2")])).status_code == 401


async def test_bad_input_to_the_commands_is_one_line(
    cli_api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run(["token", "create", "--role", "admin", "--expires", "soon"], capsys)
    assert (
        (code, out) == (2, "")
        and err.startswith("tally: --expires 'soon' is neither")
        and err.count("\n") == 1
    )
    code, _, err = await run(["token", "revoke", "not-a-uuid"], capsys)
    assert code == 2 and "'not-a-uuid' is not an api token id" in err
    code, _, err = await run(["ingest-credential", "revoke", "00000000-0000-0000-0000-000000000001"], capsys)
    assert code == 2 and "no ingest credential 00000000-0000-0000-0000-000000000001" in err
