"""Ingest credentials and api tokens: stored as hashes, found by hash, revocable."""

from __future__ import annotations

import pytest

from tally.store import RuleViolation, Store, hash_secret

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
