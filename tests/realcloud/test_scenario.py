"""The real-cloud accuracy scenario: a seeded workload over every billed type and transition the
development cloud's fake drivers make, under faults, judged against what the services recorded.

Phase 0 creates every resource, each later phase does at most one operation per resource
(``scenario_plan``), and a sync follows each phase. Each phase runs under one fault of the seed's
draw, or none: ``purge`` (the collector down and its queue purged: the notifications are lost),
``collector-down`` (the collector down, its queue keeping the backlog it delivers, late, in the next
phase), ``broker`` (every connection of the cloud's vhost closed mid-phase: the services and the
collector reconnect), ``cinder-down`` (cinder's API stopped during the phase's sync: the run fails or
leaves volumes incomplete, and never books a volume's delete; a sync after cinder is back books the
phase). The oracle is read from nova's, cinder's, glance's, neutron's and octavia's own records
(``scenario_records``) and every resource must be exact or tolerated under the simulated month's
rules (``scenario_oracle``). ``TALLY_REALCLOUD_SEED`` picks the seed (default 1),
``TALLY_REALCLOUD_SIZE`` the size (``ci``, default; ``bench``).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import amqp
import anyio
import httpx
import pytest
import yaml
from daemon_support import Daemon, daemon_env, free_port, running_daemon, wait_until_ready
from realcloud_support import CLOUD, INTERNAL, Operator, Tenant, sync, until
from scenario_oracle import evidence_lines, judge, verdict_lines
from scenario_plan import Plan, plan_from_env
from scenario_records import Records, Snapshots, read_images, read_ips, read_lbs, read_servers, read_volumes
from scenario_workload import Workload, run_all

from tally.simulation.stored import record_from_store_url

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))
from deploy.devcloud import layout as devcloud_layout  # noqa: E402
from deploy.devcloud import processes  # noqa: E402

pytestmark = pytest.mark.realcloud

SCENARIO = "os-scenario"
RESIZE_FLAVOR = "m1.small"


class Tally:
    """``tally run`` for the scenario's cloud: with the collector on the cloud's vhost, or without."""

    def __init__(self, directory: Path, devcloud: dict[str, Any]) -> None:
        operator = Operator(directory, devcloud)
        config = directory / "tally-clouds.yaml"
        entry = {
            "cloud": SCENARIO,
            "platform": "openstack",
            "adapter": "openstack",
            "sync_interval_s": 0,
            "adapter_config": {"os_cloud": f"{CLOUD}-password", "include_octavia": True},
        }
        config.write_text(yaml.safe_dump({"clouds": [entry]}))
        self.state = directory / "state"
        self.vhost = devcloud["vhost"]
        self.amqp_url = devcloud["amqp_url"]
        self.queue = f"tally-scenario-{uuid.uuid4().hex[:8]}"
        self.base = dict(
            TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
            TALLY_REPORTING_CLOUDS_CONFIG=str(config),
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            OS_CLIENT_CONFIG_FILE=str(operator.clouds_file),
        )
        self.collector = {
            "TALLY_OSC_AMQP_URL": devcloud["amqp_url"],
            "TALLY_OSC_CLOUD": SCENARIO,
            "TALLY_OSC_QUEUE_NAME": self.queue,
            "TALLY_OSC_FLUSH_INTERVAL_S": "0.2",
        }
        self.daemon: Daemon | None = None
        self.collecting = False
        self._context: Any = None
        self.runs: Counter[str] = Counter()

    def up(self, collecting: bool) -> None:
        if self.daemon is not None and self.collecting == collecting:
            return
        self.down()
        env = daemon_env(self.state, free_port(), **self.base, **(self.collector if collecting else {}))
        self._context = running_daemon(env)
        self.daemon = self._context.__enter__()
        wait_until_ready(self.daemon.base_url)
        self.collecting = collecting

    def down(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
            self._context.__exit__(None, None, None)
            self.daemon = None

    def rabbit(self, *args: str) -> str:
        done = subprocess.run(
            ["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def queue_op(self, method: str, **kwargs: Any) -> Any:
        """One call on the collector's queue over AMQP (rabbitmqctl costs a second an Erlang VM)."""
        url = urlsplit(self.amqp_url)
        where = f"{url.hostname}:{url.port or 5672}"
        with amqp.Connection(where, userid=url.username, password=url.password, virtual_host=self.vhost) as c:
            return getattr(c.channel(), method)(self.queue, **kwargs)

    def drained(self) -> None:
        """The collector has taken every notification in its queue (twice in a row: some come late)."""
        time.sleep(1.0)
        empty = 0
        deadline = time.monotonic() + 60
        while empty < 2:
            assert time.monotonic() < deadline, "the collector's queue did not drain within 60 s"
            empty = empty + 1 if self.queue_op("queue_declare", passive=True)[1] == 0 else 0
            time.sleep(0.5)
        time.sleep(0.5)  # the collector's flush interval, with room

    def sync(self) -> httpx.Response:
        assert self.daemon is not None
        answer = sync(self.daemon.base_url, SCENARIO)
        self.runs[str(answer.status_code)] += 1
        return answer


def _ensure_catalog(tenant: Tenant) -> tuple[tuple[str, str], tuple[str, str]]:
    admin = tenant.admin
    tiny = admin.compute.get_flavor(tenant.resources["flavor_id"])
    small = admin.compute.find_flavor(RESIZE_FLAVOR) or admin.compute.create_flavor(
        name=RESIZE_FLAVOR, vcpus=2, ram=1024, disk=2
    )
    for name in ("tier-a", "tier-b"):
        if admin.block_storage.find_type(name) is None:
            admin.block_storage.create_type(name=name)
    return (str(tiny.id), str(tiny.name)), (str(small.id), str(small.name))


def _stop_cinder_api() -> tuple[Any, Any]:
    layout = devcloud_layout.from_env()
    program = next(p for p in processes.services(layout) if p.name == "cinder-api")
    os.killpg(processes.running(layout)["cinder-api"], signal.SIGTERM)
    until(lambda: processes.exited(layout, "cinder-api"), 30, "cinder-api stopping")
    return layout, program


def _start_cinder_api(layout: Any, program: Any, endpoint: str) -> None:
    processes.start(layout, program)

    def answers() -> bool:
        try:
            return httpx.get(endpoint, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    until(answers, 120, "cinder-api answering again")


def _volume_deletes_by(state: Path, run_id: str) -> list[str]:
    with sqlite3.connect(state / "tally.sqlite3") as db:
        rows = db.execute(
            "SELECT resource_id, payload FROM events "
            "WHERE resource_type = 'volume' AND event_type = 'sync.delete'"
        ).fetchall()
    return [
        rid for rid, payload in rows if json.loads(payload).get("provider", {}).get("sync_run_id") == run_id
    ]


def _sync_under_cinder_down(tally: Tally, devcloud: dict[str, Any]) -> str:
    layout, program = _stop_cinder_api()
    try:
        answer = tally.sync()
    finally:
        _start_cinder_api(layout, program, devcloud["endpoints"]["block-storage"])
    with sqlite3.connect(tally.state / "tally.sqlite3") as db:
        run_id, status, stats = db.execute(
            "SELECT id, status, stats FROM sync_runs WHERE cloud = ? ORDER BY started_at DESC LIMIT 1",
            (SCENARIO,),
        ).fetchone()
    incomplete = "volume" not in json.loads(stats).get("complete_types", [])
    assert status == "failed" or incomplete, (answer.status_code, status, stats)
    assert _volume_deletes_by(tally.state, run_id) == [], "a sync without cinder booked a volume's delete"
    return f"{answer.status_code} {status}"


def _phase(plan: Plan, work: Workload, phase: int) -> list[Any]:
    if phase == 0:
        todo = [(kind, name, "create") for kind in plan.ops for name in plan.names(kind)]
    else:
        todo = plan.at(phase)
    # The kinds interleaved, so that the operations in flight are not all servers.
    rank: Counter[str] = Counter()
    ranked = []
    for item in todo:
        ranked.append((rank[item[0]], item))
        rank[item[0]] += 1
    todo = [item for _, item in sorted(ranked, key=lambda pair: pair[0])]
    return [
        work.create(kind, name, plan.volume_types[int(name.split("-")[1])] if kind == "volume" else "")
        if op == "create"
        else work.operate(kind, name, op, anchor="srv-0")
        for kind, name, op in todo
    ]


def _drive(
    plan: Plan, work: Workload, tally: Tally, snapshots: Snapshots, devcloud: dict[str, Any]
) -> tuple[tuple[datetime, datetime], list[str]]:
    """Every phase under its fault, a sync after each; the period the oracle covers, and what was seen."""
    notes: list[str] = []
    tally.up(collecting=True)  # declares the collector's queue: a collector down keeps a backlog
    assert tally.sync().status_code == 200
    period_from = datetime.now(UTC)
    for phase, fault in enumerate(plan.faults):
        began = time.monotonic()
        tally.up(collecting=fault not in ("purge", "collector-down"))

        def disrupt(fault: str = fault) -> None:
            if fault == "broker":
                tally.rabbit("close_all_connections", "-p", tally.vhost, "tally scenario: broker disruption")

        operations = _phase(plan, work, phase)
        snapshots.begin()  # before the phase's first request: the oracle places none of its changes earlier
        run_all(operations, between=disrupt)
        operated = time.monotonic()
        if fault == "purge":
            tally.queue_op("queue_purge")
        if tally.collecting:
            tally.drained()
        snapshots.take()
        if fault == "cinder-down":
            notes.append(f"phase {phase} sync without cinder: {_sync_under_cinder_down(tally, devcloud)}")
        synced = time.monotonic()
        answer = tally.sync()
        assert answer.status_code == 200, (phase, fault, answer.text)
        spent = (operated - began, synced - operated, time.monotonic() - synced)
        notes.append(
            f"phase {phase} ({fault or 'no fault'}): {len(operations)} operations in {spent[0]:.0f} s, "
            f"drained and recorded in {spent[1]:.0f} s, synced in {spent[2]:.0f} s"
        )
    tally.up(collecting=True)
    tally.drained()
    assert tally.sync().status_code == 200
    return (period_from, datetime.now(UTC)), notes


def test_the_scenario_is_exact_or_tolerated_under_every_fault(
    devcloud: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_from_env()
    began = time.monotonic()
    tenant = Tenant(devcloud)
    work = Workload(tenant, _ensure_catalog(tenant))
    snapshots = Snapshots(tenant.admin, tenant.project.id)
    tally = Tally(tmp_path, devcloud)
    try:
        period, notes = _drive(plan, work, tally, snapshots, devcloud)
    finally:
        tally.down()
        tally.queue_op("queue_delete")
    driven_s = time.monotonic() - began

    records = Records()
    databases = {
        name.removeprefix(devcloud_layout.from_env().prefix + "_"): name for name in devcloud["databases"]
    }
    project = str(tenant.project.id)
    planned = {
        work.ids[name]: ("create", *steps) for by_name in plan.ops.values() for name, steps in by_name.items()
    }
    read_servers(records, databases, project, planned, snapshots.began)
    read_volumes(records, databases, project, snapshots)
    read_images(records, databases, project, planned, snapshots.began)
    read_ips(records, project, snapshots, work.ip_deleted)
    read_lbs(records, databases, project, snapshots)
    stored = anyio.run(record_from_store_url, f"sqlite:///{tally.state / 'tally.sqlite3'}", SCENARIO)
    oracle, comparison = judge(
        records, stored, cloud=SCENARIO, seed=plan.seed, project=project, period=period
    )
    judged_s = time.monotonic() - began - driven_s
    lines = [
        f"real-cloud scenario: seed {plan.seed}, size {plan.size_name}, faults by phase {list(plan.faults)}, "
        f"{len(oracle.resources)} resources, driven in {driven_s:.0f} s, judged in {judged_s:.0f} s",
        *notes,
        *verdict_lines(comparison, oracle, tally.runs),
        *evidence_lines(comparison, records, stored, snapshots.began),
    ]
    (tmp_path / "verdicts.json").write_text(json.dumps(comparison.to_doc(), default=str, indent=1))
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert comparison.off == 0, "\n".join(lines)
    assert {kind for kind, _ in records.changes} == {
        "instance",
        "volume",
        "floating_ip",
        "image",
        "loadbalancer",
    }
