"""Ingest credentials and api tokens: stored as hashes, found by hash, revocable, expiring, audited;
and the deployment's shared secrets."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import anyio
import pytest

from tally.core import ONE_MICROSECOND, utc_now
from tally.store import RuleViolation, Store, hash_secret, open_store

pytestmark = pytest.mark.anyio


async def test_ingest_credential_by_hash(store: Store) -> None:
    digest = hash_secret("s3cret")
    assert len(digest) == 64 and digest != "s3cret"
    cred = await store.create_ingest_credential(platform="openstack", cloud="os-dev", token_hash=digest)
    found = await store.ingest_credential_by_hash(digest)
    assert found is not None and (found.id, found.platform, found.cloud) == (cred.id, "openstack", "os-dev")
    assert await store.ingest_credential_by_hash(hash_secret("other")) is None
    assert await store.revoke_ingest_credential(cred.id)
    assert await store.ingest_credential_by_hash(digest) is None
    assert not await store.revoke_ingest_credential(cred.id)


async def test_api_tokens_by_role(store: Store) -> None:
    project = await store.create_project(platform="openstack", cloud="os-dev", external_id="p")
    admin = await store.create_api_token(token_hash=hash_secret("a"), role="admin", description="ops")
    scoped = await store.create_api_token(
        token_hash=hash_secret("p"), role="project", project_ids=[project.id]
    )
    got = await store.api_token_by_hash(hash_secret("p"))
    assert got is not None and got.role == "project" and got.project_ids == (project.id,)
    got_admin = await store.api_token_by_hash(hash_secret("a"))
    assert got_admin is not None and got_admin.id == admin.id and got_admin.project_ids == ()
    with pytest.raises(RuleViolation, match="at least one project"):
        await store.create_api_token(token_hash=hash_secret("x"), role="project")
    assert await store.revoke_api_token(scoped.id)
    assert await store.api_token_by_hash(hash_secret("p")) is None


async def test_an_expired_secret_is_not_found_from_its_expiry_on(store: Store) -> None:
    expires = datetime(2030, 1, 1, tzinfo=UTC)
    token = await store.create_api_token(token_hash=hash_secret("t"), role="read_all", expires_at=expires)
    cred = await store.create_ingest_credential(
        platform="openstack", cloud="os-dev", token_hash=hash_secret("c"), expires_at=expires
    )
    before, at_expiry = expires - ONE_MICROSECOND, expires
    found = await store.api_token_by_hash(hash_secret("t"), at=before)
    assert found is not None and found.expires_at == expires and found.status(before) == "active"
    assert await store.api_token_by_hash(hash_secret("t"), at=at_expiry) is None
    assert await store.ingest_credential_by_hash(hash_secret("c"), at=before) is not None
    assert await store.ingest_credential_by_hash(hash_secret("c"), at=at_expiry) is None
    listed = {t.id: t for t in await store.list_api_tokens()}
    assert listed[token.id].status(at_expiry) == "expired"
    assert [c.id for c in await store.list_ingest_credentials()] == [cred.id]


async def test_secrets_without_expiry_never_expire(store: Store) -> None:
    await store.create_api_token(token_hash=hash_secret("t"), role="admin")
    assert await store.api_token_by_hash(hash_secret("t"), at=datetime(9999, 1, 1, tzinfo=UTC)) is not None


async def test_create_and_revoke_write_one_audit_row_each(store: Store) -> None:
    token = await store.create_api_token(
        token_hash=hash_secret("t"),
        role="read_all",
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
        actor="cli:ann",
    )
    cred = await store.create_ingest_credential(
        platform="openstack", cloud="os-dev", token_hash=hash_secret("c"), actor="cli:bob"
    )
    (created,) = await store.list_audit(action="api_token.create")
    assert (created.actor, created.object_type, created.object_id) == ("cli:ann", "api_token", token.id)
    assert created.details == {"role": "read_all", "project_ids": [], "expires_at": "2030-01-01T00:00:00Z"}
    (cred_created,) = await store.list_audit(action="ingest_credential.create")
    assert cred_created.object_id == cred.id and cred_created.details["cloud"] == "os-dev"
    assert await store.revoke_api_token(token.id, actor="cli:ann")
    assert not await store.revoke_api_token(token.id, actor="cli:ann")  # already revoked: no second row
    assert await store.revoke_ingest_credential(cred.id, actor="cli:bob")
    (revoked,) = await store.list_audit(action="api_token.revoke")
    assert (revoked.actor, revoked.object_id) == ("cli:ann", token.id)
    assert [r.object_id for r in await store.list_audit(action="ingest_credential.revoke")] == [cred.id]
    assert not await store.revoke_api_token(str(uuid.uuid4()), actor="cli:ann")  # unknown: no row
    assert len(await store.list_audit(action="api_token.revoke")) == 1


async def test_listings_hold_revoked_secrets_oldest_first(store: Store) -> None:
    first = await store.create_api_token(token_hash=hash_secret("1"), role="admin", description="ops")
    second = await store.create_api_token(token_hash=hash_secret("2"), role="read_all")
    await store.revoke_api_token(first.id)
    listed = await store.list_api_tokens()
    assert [t.id for t in listed] == [first.id, second.id]
    assert listed[0].revoked_at is not None and listed[0].status(utc_now()) == "revoked"
    assert listed[0].description == "ops" and listed[1].status(utc_now()) == "active"


async def test_the_shared_secret_is_one_per_name_for_every_replica(store_url: str, store: Store) -> None:
    key = await store.shared_secret("cursor")
    assert len(key) == 32 and await store.shared_secret("cursor") == key
    assert await store.shared_secret("other") != key
    async with open_store(store_url) as replica:  # a second process on the same database
        assert await replica.shared_secret("cursor") == key


async def test_concurrent_first_uses_agree_on_one_secret(store_url: str, store: Store) -> None:
    got: list[bytes] = []
    async with open_store(store_url) as replica:

        async def take(s: Store) -> None:
            got.append(await s.shared_secret("fresh"))

        async with anyio.create_task_group() as tg:
            for s in (store, replica, store, replica):
                tg.start_soon(take, s)
    assert len(set(got)) == 1
