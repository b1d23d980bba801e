"""Benchmark: the fake OpenStack cloud serving the full set of listings of a large world.

Builds a world (250,000 resources by default: 50,000 of each of the five types, a tenth of the
instances deleted), serves it with the fake cloud over real HTTP, and walks every listing a sync
reads (servers of all projects, deleted servers since the period start, flavors, volumes, volume
types, floating IPs, images, load balancers) page by page, following each service's own paging.

The floor is the same HTTP server (Hypercorn, Quart) sending the same pages as pre-serialised
bytes, walked the same way in the same run: the ratio says what building pages from the world
costs on top of moving them. Memory: the process's RSS after the first walk and after every
further walk; the fake keeps nothing per request, so it must not grow with the number of walks.

    python -m bench.fakecloud [--quick] [--resources N] [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
from quart import Quart, Response, request

from tally.simulation import serve_fake_cloud
from tally.simulator import World, WorldBuilder, create_fake_cloud_app
from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_USER

T0 = datetime(2026, 7, 1, tzinfo=UTC)
T1 = datetime(2026, 8, 1, tzinfo=UTC)


def build_world(total: int) -> World:
    per_type = total // 5
    b = WorldBuilder(cloud="os-bench", period_from=T0, period_to=T1)
    projects = [b.project(f"tenant-{i}") for i in range(20)]
    flavors = [b.flavor(f"m1.f{i}", vcpus=1 + i, ram_mb=2048 * (1 + i), disk_gb=20) for i in range(5)]
    vtypes = [b.volume_type("ssd"), b.volume_type("hdd"), b.volume_type("vault", is_public=False)]
    month = (T1 - T0).total_seconds()
    for i in range(per_type):
        p = projects[i % len(projects)]
        at = T0 + timedelta(seconds=(i * 7919) % int(month * 0.9))
        vm = b.instance(p, flavors[i % 5], created_at=at, building=timedelta(seconds=40))
        vm.change(at + timedelta(hours=2), state="shutoff" if i % 3 == 0 else "active")
        if i % 10 == 0:
            vm.terminate(at + timedelta(hours=5))
        b.volume(p, vtypes[i % 3], size_gb=10 + i % 90, created_at=at)
        b.floating_ip(p, address=f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", created_at=at)
        b.image(p, size_bytes=2**20 * (1 + i % 4096), created_at=at)
        b.loadbalancer(p, created_at=at, listeners=i % 4, pools=i % 3)
    return b.build()


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def listings(project: str) -> list[tuple[str, str, Callable[[dict[str, Any]], str | None]]]:
    """(first URL, item key, next-URL-of-body) for every listing a sync reads."""

    def link(key: str, prefix: str) -> Callable[[dict[str, Any]], str | None]:
        def nxt(body: dict[str, Any]) -> str | None:
            for item in body.get(key, []):
                if item["rel"] == "next":
                    href = str(item["href"])
                    return href[href.index(prefix) :]
            return None

        return nxt

    def none(_: dict[str, Any]) -> None:
        return None

    def glance(body: dict[str, Any]) -> str | None:
        return "/image" + body["next"] if "next" in body else None

    return [
        ("/compute/v2.1/servers/detail?all_tenants=1", "servers", link("servers_links", "/compute/")),
        (
            "/compute/v2.1/servers/detail?all_tenants=1&deleted=true&changes-since=2026-07-01T00:00:00Z",
            "servers",
            link("servers_links", "/compute/"),
        ),
        ("/compute/v2.1/flavors/detail", "flavors", link("flavors_links", "/compute/")),
        (f"/volume/v3/{project}/volumes/detail?all_tenants=1", "volumes", link("volumes_links", "/volume/")),
        (f"/volume/v3/{project}/types?is_public=None", "volume_types", none),
        ("/network/v2.0/floatingips?limit=1000", "floatingips", link("floatingips_links", "/network/")),
        ("/image/v2/images?limit=1000", "images", glance),
        (
            "/load-balancer/v2/lbaas/loadbalancers",
            "loadbalancers",
            link("loadbalancers_links", "/load-balancer/"),
        ),
    ]


async def walk(
    client: httpx.AsyncClient, base: str, token: str, project: str, pages: dict[str, bytes] | None
) -> tuple[int, int]:
    """Walk every listing; returns (resources, requests). Records each page's bytes into ``pages``."""
    resources = requests = 0
    headers = {"X-Auth-Token": token, "OpenStack-API-Version": "compute 2.79"}
    for first, key, nxt in listings(project):
        url: str | None = first
        while url is not None:
            answer = await client.get(base + url, headers=headers)
            if answer.status_code != 200:
                raise RuntimeError(f"{url} answered {answer.status_code}: {answer.text[:200]}")
            requests += 1
            if pages is not None:
                pages[url] = answer.content
            body = answer.json()
            resources += len(body[key])
            url = nxt(body)
    return resources, requests


def floor_app(pages: dict[str, bytes]) -> Quart:
    app = Quart("floor")

    @app.get("/<path:path>")
    async def page(path: str) -> Response:
        key = request.full_path if request.query_string else request.path
        return Response(pages[key], content_type="application/json")

    return app


async def run(total: int, rounds: int) -> None:
    started = time.perf_counter()
    world = build_world(total)
    build_s = time.perf_counter() - started
    app = create_fake_cloud_app(world)
    state = app.config["FAKE_CLOUD"]
    pages: dict[str, bytes] = {}
    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=120) as client:
        port = await tg.start(serve_fake_cloud, app)
        base = f"http://127.0.0.1:{port}"
        auth = {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {
                        "user": {
                            "name": ADMIN_USER,
                            "domain": {"name": "Default"},
                            "password": ADMIN_PASSWORD,
                        }
                    },
                },
                "scope": {"project": {"name": "service", "domain": {"name": "Default"}}},
            }
        }
        token = (await client.post(f"{base}/v3/auth/tokens", json=auth)).headers["X-Subject-Token"]
        project = state.accounts.admin.project_id
        resources, requests = await walk(client, base, token, project, pages)  # warm-up, records the floor
        gc.collect()
        rss_first = rss_mib()
        fake_s = 0.0
        rss: list[float] = []
        for _ in range(rounds):
            t = time.perf_counter()
            await walk(client, base, token, project, None)
            fake_s += time.perf_counter() - t
            gc.collect()
            rss.append(rss_mib())
        tg.cancel_scope.cancel()
    floor = floor_app(pages)
    async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=120) as client:
        port = await tg.start(serve_fake_cloud, floor)
        floor_s = 0.0
        for _ in range(rounds):
            t = time.perf_counter()
            got, _ = await walk(client, f"http://127.0.0.1:{port}", "x", project, None)
            floor_s += time.perf_counter() - t
            assert got == resources
        tg.cancel_scope.cancel()

    fake_rate = resources * rounds / fake_s
    floor_rate = resources * rounds / floor_s
    print(f"world: {len(world.resources):,} resources, built in {build_s:.1f} s")
    print(f"one full walk: {resources:,} resources listed in {requests} requests")
    print()
    print(f"{'server':<34}{'walks':>6}{'seconds':>10}{'resources/s':>14}")
    print(f"{'fake cloud (pages from the world)':<34}{rounds:>6}{fake_s:>10.2f}{fake_rate:>14,.0f}")
    print(f"{'floor (pre-serialised pages)':<34}{rounds:>6}{floor_s:>10.2f}{floor_rate:>14,.0f}")
    print()
    print(f"RSS after the warm-up walk: {rss_first:.1f} MiB")
    print("RSS after each further walk: " + ", ".join(f"{value:.1f}" for value in rss) + " MiB")
    growth = rss[-1] - rss_first
    print(f"RSS growth over {rounds} walks ({rounds * requests} requests): {growth:+.1f} MiB")
    print(f"RATIO fakecloud_vs_floor={fake_rate / floor_rate:.3f}")
    print(f"RATIO fakecloud_rss_growth_mib={growth:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small world, for CI")
    parser.add_argument("--resources", type=int, default=None, help="resources in the world (all five types)")
    parser.add_argument("--rounds", type=int, default=None, help="full walks measured")
    args = parser.parse_args()
    total = args.resources or (5_000 if args.quick else 250_000)
    rounds = args.rounds or (2 if args.quick else 4)
    anyio.run(run, total, rounds)


if __name__ == "__main__":
    main()
