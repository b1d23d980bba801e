"""``tally simulator serve``: a world file served standalone, stopped by SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from fakecloud_support import serve, small_world

from tally.cli import simulator as commands
from tally.config import Settings


def _start(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TALLY_SIM_HTTP_ADDR": "127.0.0.1"}
    return subprocess.Popen(
        [sys.executable, "-m", "tally", "simulator", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_serve_a_world_file_until_sigterm(tmp_path: Path) -> None:
    world_file = tmp_path / "world.json"
    world_file.write_bytes(small_world().to_json())
    proc = _start("--world", str(world_file), "--port", "0", "--faults", "probe_refused")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fake cloud serving url=http://127.0.0.1:"), line + (
            proc.stderr.read() if proc.stderr else ""
        )
        url = line.split("url=", 1)[1].split()[0]
        assert httpx.get(f"{url}/healthz").text.strip() == "ok"
        clock = httpx.get(f"{url}/clock").json()
        assert clock["virtual_now"] == "2026-08-01T00:00:00Z"  # the end of the period
        assert httpx.get(f"{url}/faults").json()["probe_refused"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    assert code == 0


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--world", "/nonexistent/world.json"], "cannot read world file /nonexistent/world.json"),
        (["--seed", "1"], "--seed needs --period"),
        (["--world", "{world}", "--faults", "meteor_strike"], "unknown fault 'meteor_strike'"),
        (["--world", "{world}", "--at", "yesterday"], "not an instant"),
        (
            ["--world", "{world}", "--extra-volume-types", "-1"],
            "--extra-volume-types must be 0 to 100000, not -1",
        ),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(
    args: list[str], reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world_file = tmp_path / "world.json"
    world_file.write_bytes(small_world().to_json())
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers())
    parsed = parser.parse_args(
        ["simulator", "serve", *(a.format(world=world_file) for a in args), "--port", "0"]
    )
    assert anyio.run(parsed.handler, parsed) == 2
    assert reason in capsys.readouterr().err


@pytest.mark.anyio
async def test_the_generated_month_is_served_exactly() -> None:
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers())
    parsed = parser.parse_args(["simulator", "serve", "--seed", "1", "--period", "2026-07"])
    world = commands.load_world(parsed, Settings())
    async with await serve(world) as fake:
        token = await fake.token()
        project = fake.state.accounts.admin.project_id
        listings = {
            "instance": ("/compute/v2.1/servers/detail?all_tenants=1", "servers"),
            "volume": (f"/volume/v3/{project}/volumes/detail?all_tenants=1", "volumes"),
            "floating_ip": ("/network/v2.0/floatingips", "floatingips"),
            "image": ("/image/v2/images?visibility=all&limit=1000", "images"),
            "loadbalancer": ("/load-balancer/v2/lbaas/loadbalancers", "loadbalancers"),
        }
        for rtype, (path, key) in listings.items():
            answer = await fake.get(path, token)
            assert answer.status_code == 200
            listed = {row["id"] for row in answer.json()[key]}
            # A soft-deleted server is alive (restorable) but nova lists it only with deleted=true.
            live = {
                r.resource_id
                for r in world.of_type(rtype)
                if r.alive_at(world.period_to) and r.last.state != "soft_deleted" and not r.hidden
            }
            assert listed == live, rtype
        hidden = {r.resource_id for r in world.of_type("image") if r.alive_at(world.period_to) and r.hidden}
        assert hidden, "the month holds no hidden image"
        answer = await fake.get("/image/v2/images?visibility=all&os_hidden=true", token)
        assert {row["id"] for row in answer.json()["images"]} == hidden
        restorable = {
            r.resource_id
            for r in world.of_type("instance")
            if r.alive_at(world.period_to) and r.last.state == "soft_deleted"
        }
        assert restorable, "the month holds no soft-deleted server"
        answer = await fake.get(
            "/compute/v2.1/servers/detail?all_tenants=1&deleted=true&status=SOFT_DELETED", token
        )
        assert {row["id"] for row in answer.json()["servers"]} == restorable
        assert {row["OS-EXT-STS:vm_state"] for row in answer.json()["servers"]} == {"soft-delete"}


@pytest.mark.anyio
async def test_extra_volume_types_are_served_a_page_at_a_time() -> None:
    world = commands.with_extra_volume_types(small_world(), 1500)
    async with await serve(world) as fake:
        token = await fake.token()
        path = f"/volume/v3/{fake.state.accounts.admin.project_id}/types?is_public=None"
        first = (await fake.get(path, token)).json()
        assert len(first["volume_types"]) == 1000 and "volume_types_links" not in first
        marker = first["volume_types"][-1]["id"]
        rest = (await fake.get(f"{path}&marker={marker}", token)).json()["volume_types"]
        names = {t["name"] for t in first["volume_types"] + rest}
        assert len(names) == len(world.volume_types) == 1502
        assert {f"extra-{n:05d}" for n in range(1, 1501)} <= names
