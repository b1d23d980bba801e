"""A clouds.yaml entry of every broken kind: one line naming the entry and the reason, on a sync (the run
failed, its row holding the line, ``POST /internal/sync`` answering 500 without it) and in
``tally check-cloud`` (exit 1, that line, no traceback)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from reconcile_support import T0, Harness, builder, minutes, open_harness, scheduler_of
from test_commands import configure, run_cli

from tally.config import CloudEntry, Settings
from tally.http import ReportingServices, create_reporting_app
from tally.reconcile import Status
from tally.reconcile._run import RunSettings
from tally.reconcile._service import SyncService
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]


def broken_entries(h: Harness, home: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """Entry name -> (the entry, the reason its run must give after the seed's prefix)."""
    auth = {
        "auth_url": f"{h.base_url}/v3",
        "username": "tally-sync",
        "password": "tally-dev-sync-password",
        "project_name": "service",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
    }
    no_url = {k: v for k, v in auth.items() if k != "auth_url"}
    no_password = {k: v for k, v in auth.items() if k != "password"}
    no_user_domain = {k: v for k, v in auth.items() if k != "user_domain_name"}
    return {
        "no-auth-url": (
            {"auth_type": "password", "auth": no_url},
            "Auth plugin requires parameters which were not given: auth_url",
        ),
        "unknown-auth-type": (
            {"auth_type": "v3kerberos2", "auth": auth},
            "The plugin v3kerberos2 could not be found",
        ),
        "no-password": (
            {"auth_type": "password", "auth": no_password},
            "You must provide a password to authenticate",
        ),
        "no-token": (
            {"auth_type": "token", "auth": {"auth_url": auth["auth_url"], "project_name": "service"}},
            "Auth plugin requires parameters which were not given: token",
        ),
        "no-user-domain": (
            {"auth_type": "v3password", "auth": no_user_domain},
            "You have provided a username. In the V3 identity API a username is only unique within a domain "
            "so you must also provide either a user_domain_id or user_domain_name.",
        ),
        "unreadable-cacert": (
            {"auth_type": "password", "auth": auth, "cacert": "~/no-such-ca.pem"},
            f"the CA file {home}/no-such-ca.pem cannot be used: [Errno 2] No such file or directory",
        ),
    }


@asynccontextmanager
async def harness_with_broken_entries(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Harness, dict[str, tuple[dict[str, Any], str]]]]:
    """A harness whose clouds.yaml holds every entry of ``broken_entries`` (HOME in ``tmp_path``)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    async with open_harness(builder().build(), store, tmp_path) as h:
        h.at(T0 + minutes(60))
        broken = broken_entries(h, home)
        for name, (entry, _) in broken.items():
            h.add_clouds_yaml_entry(name, entry)
        yield h, broken


async def assert_refused_in_one_line(
    h: Harness,
    name: str,
    line: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Entry ``name``'s sync fails with ``line`` as its one error, and check-cloud exits 1 printing it."""
    outcome = await h.sync(T0 + minutes(60), entry=h.entry_for(name))
    assert outcome.status is Status.FAILED
    assert (await h.run_row(outcome))["stats"]["errors"] == [line], name
    configure(monkeypatch, tmp_path, h.cloud, name)
    assert await run_cli("check-cloud", h.cloud) == 1
    captured = capsys.readouterr()
    assert captured.out == f"FINDING  token: {line}\n"
    assert "Traceback" not in captured.err


async def test_a_broken_entry_fails_its_sync_and_its_check_in_one_line(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with harness_with_broken_entries(store, tmp_path, monkeypatch) as (h, broken):
        for name, (_, reason) in broken.items():
            line = f'authenticating against the cloud "{name}": {reason}'
            await assert_refused_in_one_line(h, name, line, tmp_path, monkeypatch, capsys)


async def test_a_clouds_yaml_that_is_no_yaml_fails_every_entry_naming_it(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with open_harness(builder().build(), store, tmp_path) as h:
        h.clouds_yaml.write_text("clouds:\n  admin: {auth: [\n")
        prefix = f'resolving the clouds.yaml entry "admin" in {h.clouds_yaml}: while parsing a flow '
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.FAILED
        (error,) = (await h.run_row(outcome))["stats"]["errors"]
        assert error.startswith(prefix) and "\n" not in error
        configure(monkeypatch, tmp_path, h.cloud, "admin")
        assert await run_cli("check-cloud", h.cloud) == 1
        captured = capsys.readouterr()
        assert captured.out.startswith(f"FINDING  token: {prefix}") and captured.out.count("\n") == 1
        assert "Traceback" not in captured.err


async def test_the_sync_route_answers_500_and_keeps_the_reason_in_the_row(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with harness_with_broken_entries(store, tmp_path, monkeypatch) as (h, broken):
        entries = [
            CloudEntry(f"{h.cloud}-{name}", "openstack", "openstack", {"os_cloud": name}, sync_interval_s=0)
            for name in broken
        ]
        service = SyncService(entries, store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        settings = Settings(reporting_internal_token=SecretStr("internal-secret"), reporting_sync_settle_s=0)
        for cloud, (name, (_, reason)) in zip((e.cloud for e in entries), broken.items(), strict=True):
            # The route asks the cloud's scheduler, as in the daemon.
            async with scheduler_of(service, cloud) as (runner, _):
                client = create_reporting_app(
                    ReportingServices(store, h.pipeline, settings, runner)
                ).test_client()
                answer = await client.post(
                    f"/internal/sync/{cloud}", headers={"Authorization": "Bearer internal-secret"}
                )
                assert answer.status_code == 500
                body = await answer.get_json()
                assert body["detail"] == "the sync run failed", body
                # The reason is the row's (and the log's), not the caller's.
                assert reason not in str(body) and name not in str(body)
                (run,) = await store.list_sync_runs(cloud)
                assert run["status"] == "failed"
                assert run["stats"]["errors"] == [f'authenticating against the cloud "{name}": {reason}']


async def test_an_unknown_profile_is_named_not_taken_for_a_missing_auth_url(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with open_harness(builder().build(), store, tmp_path) as h:
        entry = {"profile": "no-such-profile", "auth": {"username": "tally-sync"}}
        h.add_clouds_yaml_entry("profiled", entry)
        public = h.clouds_yaml.with_name("clouds-public.yaml")
        line = (
            f'resolving the clouds.yaml entry "profiled" in {h.clouds_yaml}: the profile "no-such-profile" '
            f"is neither in {public} nor one of openstacksdk's vendor profiles"
        )
        await assert_refused_in_one_line(h, "profiled", line, tmp_path, monkeypatch, capsys)
