"""``tally token create`` and ``tally ingest-credential create``: the secret is printed once and works."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tally.cli import tokens as commands
from tally.store import hash_secret, open_store

pytestmark = pytest.mark.anyio


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tally")
    commands.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


@pytest.fixture
async def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'tally.sqlite3'}"
    monkeypatch.setenv("TALLY_REPORTING_DB_URL", url)
    async with open_store(url) as store:
        await store.migrate_up()
    return url


async def test_token_create_prints_the_secret_once_and_stores_its_hash(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(["token", "create", "--role", "read_all", "--description", "grafana"])
    assert await args.handler(args) == 0
    out, err = capsys.readouterr()
    secret = out.strip()
    assert secret.startswith("tly_") and secret not in err
    async with open_store(db_url) as store:
        token = await store.api_token_by_hash(hash_secret(secret))
    assert token is not None and token.role == "read_all" and token.description == "grafana"


async def test_project_token_needs_existing_projects(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["token", "create", "--role", "project"])
    assert await args.handler(args) == 2
    assert "--role project needs at least one --project-id" in capsys.readouterr().err
    args = parse(
        ["token", "create", "--role", "project", "--project-id", "00000000-0000-0000-0000-000000000001"]
    )
    assert await args.handler(args) == 2
    assert "no project 00000000-0000-0000-0000-000000000001" in capsys.readouterr().err
    async with open_store(db_url) as store:
        project = await store.create_project(platform="openstack", cloud="os-dev", external_id="p-1")
    args = parse(["token", "create", "--role", "project", "--project-id", project.id])
    assert await args.handler(args) == 0
    assert capsys.readouterr().out.strip().startswith("tly_")


async def test_ingest_credential_create(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["ingest-credential", "create", "--platform", "openstack", "--cloud", "os-dev"])
    assert await args.handler(args) == 0
    secret = capsys.readouterr().out.strip()
    async with open_store(db_url) as store:
        credential = await store.ingest_credential_by_hash(hash_secret(secret))
    assert credential is not None and (credential.platform, credential.cloud) == ("openstack", "os-dev")
    args = parse(["ingest-credential", "create", "--platform", "meta", "--cloud", "os-dev"])
    assert await args.handler(args) == 2
    assert "reserved" in capsys.readouterr().err


async def test_schema_behind_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALLY_REPORTING_DB_URL", f"sqlite:///{tmp_path / 'empty.sqlite3'}")
    args = parse(["token", "create", "--role", "admin"])
    assert await args.handler(args) == 2
    assert "run `tally migrate up` first" in capsys.readouterr().err
