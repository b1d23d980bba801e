"""``tally sync`` and ``tally check-cloud`` against the fake cloud, through the command line."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from pathlib import Path

import anyio
import pytest
import yaml
from anyio.abc import TaskStatus
from quart import Quart, Response, request
from reconcile_support import T0, builder, minutes, open_harness

from tally.cli import main
from tally.simulation import serve_fake_cloud
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]


def configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cloud: str, os_cloud: str = "admin") -> None:
    config = tmp_path / "clouds-config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clouds": [
                    {
                        "cloud": cloud,
                        "platform": "openstack",
                        "adapter": "openstack",
                        "adapter_config": {"os_cloud": os_cloud},
                    }
                ]
            }
        )
    )
    monkeypatch.setenv("TALLY_REPORTING_CLOUDS_CONFIG", str(config))
    monkeypatch.setenv("TALLY_REPORTING_DB_URL", f"sqlite:///{tmp_path / 'cli.sqlite3'}")
    monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", "0")


async def run_cli(*argv: str) -> int:
    return await anyio.to_thread.run_sync(main, list(argv))


async def test_tally_sync_prints_its_answer(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    b.volume(p, vt, size_gb=3, created_at=T0 + minutes(1))
    async with open_harness(b.build(), store, tmp_path) as h:
        configure(monkeypatch, tmp_path, h.cloud)
        h.at(T0 + minutes(60))
        assert await run_cli("sync", h.cloud, "--at", "2026-07-01T01:00:00Z") == 2  # ALLOW_AT is off
        assert "TALLY_REPORTING_SYNC_ALLOW_AT is off" in capsys.readouterr().err
        monkeypatch.setenv("TALLY_REPORTING_SYNC_ALLOW_AT", "true")
        assert await run_cli("sync", h.cloud, "--at", "2026-07-01T01:00:00Z") == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["status"] == "completed" and answer["stats"] == {
            "created": 1,
            "updated": 0,
            "deleted": 0,
        }
        assert await run_cli("sync", "os-nowhere") == 2
        h.state.faults.down.add("network")
        assert await run_cli("sync", h.cloud, "--at", "2026-07-01T02:00:00Z") == 1
        failed = json.loads(capsys.readouterr().out)
        assert any(e.startswith("enumerating floating_ip: ") for e in failed["errors"])


async def test_check_cloud_passes_an_admin_and_finds_a_member(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    b = builder()
    p = b.project("alpha")
    q = b.project("beta")
    vt = b.volume_type("ssd")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    for proj in (p, q):
        b.instance(proj, f, created_at=T0 + minutes(1))
        b.volume(proj, vt, size_gb=3, created_at=T0 + minutes(1))
        b.floating_ip(proj, address="203.0.113.4", created_at=T0 + minutes(1))
        b.image(proj, size_bytes=2**30, created_at=T0 + minutes(1))
    async with open_harness(b.build(), store, tmp_path) as h:
        h.at(T0 + minutes(60))
        configure(monkeypatch, tmp_path, h.cloud, "tally-read-only")
        assert await run_cli("check-cloud", h.cloud) == 0, capsys.readouterr().out
        out = capsys.readouterr().out
        assert "ok       probe" in out and "FINDING" not in out
        configure(monkeypatch, tmp_path, h.cloud, "member")
        assert await run_cli("check-cloud", h.cloud) == 1
        assert "FINDING  probe" in capsys.readouterr().out


async def test_check_cloud_finds_a_credential_missing_an_access_rule(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_sync_credentials import add_seven_rule_credential, world

    async with open_harness(world(), store, tmp_path, prepare=add_seven_rule_credential) as h:
        h.at(T0 + minutes(60))
        clouds = yaml.safe_load(h.clouds_yaml.read_text())
        clouds["clouds"]["seven"] = {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": f"{h.base_url}/v3",
                "application_credential_id": "7" * 32,
                "application_credential_secret": "seven-secret",
            },
        }
        h.clouds_yaml.write_text(yaml.safe_dump(clouds))
        configure(monkeypatch, tmp_path, h.cloud, "seven")
        assert await run_cli("check-cloud", h.cloud) == 1
        out = capsys.readouterr().out
        assert "FINDING  access rules: block-storage GET /**/types answered 401" in out
        assert "ok       probe" in out


async def test_check_cloud_reports_an_answer_that_is_no_listing_in_one_line(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def serve_floating_ips_as_a_list(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> Awaitable[None]:
        @app.before_request
        async def not_a_listing() -> Response | None:
            # What a proxy in front of neutron might answer: JSON, 200, but no floatingips member.
            return (
                Response("[]", content_type="application/json")
                if request.path.endswith("/floatingips")
                else None
            )

        return serve_fake_cloud(app, host, port, task_status=task_status)

    async with open_harness(builder().build(), store, tmp_path, serve=serve_floating_ips_as_a_list) as h:
        h.at(T0 + minutes(60))
        configure(monkeypatch, tmp_path, h.cloud)
        assert await run_cli("check-cloud", h.cloud) == 1
        captured = capsys.readouterr()
        assert "FINDING  network: the answer has no floatingips list\n" in captured.out
        assert "Traceback" not in captured.err
