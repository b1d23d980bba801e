"""What the services themselves recorded of the scenario's project: the oracle's evidence.

Every change is a :class:`Change`: the facts a resource has after it (None: gone) and the window in
which the service's own records place it, ``[lo, hi)``. The services write their instants at whole
seconds (MariaDB ``DATETIME``) and notify just after writing them, so a window runs from the record's
second to :data:`SLACK` past the last second the record names. Read from:

- nova's database: each server's instance actions and their events (create, resize, revertResize,
  stop, start, shelve, unshelve, delete: the compute event that does the change), its migrations
  and nova_api's flavors (the flavor before and after a resize), ``terminated_at``;
- cinder's database: ``launched_at`` (available) and ``deleted_at``; a change of size, type or
  status at the ``updated_at`` cinder's API showed after the phase that made it (cinder keeps no
  history of a volume's changes: one change per phase makes its ``updated_at`` that change's);
- glance's database: ``created_at``, the upload's location ``created_at``, ``deleted_at`` (shelve
  snapshots of nova included);
- neutron's API after each phase (``created_at``); neutron deletes the row, so a delete is placed
  between its last answer with the address and its first 404 (``Workload.ip_deleted``);
- octavia's API after each phase (the load balancer's ``updated_at`` once ACTIVE, its listeners' and
  pools' ``created_at``) and its database (the ``DELETED`` row's ``updated_at``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

SLACK: Final = timedelta(seconds=2)
GIB: Final = Decimal(2**30)

Facts = tuple[str, str, dict[str, Any]]  # state, project, size


@dataclass(frozen=True, slots=True)
class Change:
    lo: datetime
    hi: datetime
    facts: Facts | None  # None: the resource is gone
    what: str  # the record it rests on, for the report


@dataclass
class Records:
    """Changes by (resource_type, resource_id), and the creation instants the listings report."""

    changes: dict[tuple[str, str], list[Change]] = field(default_factory=dict)
    platform_created: dict[tuple[str, str], datetime] = field(default_factory=dict)

    def add(self, key: tuple[str, str], change: Change) -> None:
        self.changes.setdefault(key, []).append(change)


def instant(text: str | None) -> datetime | None:
    if text in (None, "", "NULL", "None"):
        return None
    assert text is not None
    return datetime.fromisoformat(text.replace("Z", "")).replace(tzinfo=UTC)


def window(lo: datetime, hi: datetime | None = None) -> tuple[datetime, datetime]:
    """From the record's second to SLACK past the last second it names: the second the record floors
    to, and one more for the notification the service sends after writing it."""
    return lo, (hi or lo) + SLACK


def mysql(query: str) -> list[list[str | None]]:
    done = subprocess.run(
        ["mysql", "-h", "127.0.0.1", "-u", "root", "-N", "-B", "-e", query],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [[None if v == "NULL" else v for v in line.split("\t")] for line in done.stdout.splitlines()]


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def flavor_size(name: str, vcpus: Any, memory_mb: Any, root_gb: Any, ephemeral_gb: Any) -> dict[str, Any]:
    return {
        "vcpus": int(vcpus),
        "ram_gb": _number(Decimal(int(memory_mb)) / 1024),
        "disk_gb": int(root_gb) + int(ephemeral_gb or 0),
        "flavor": name,
    }


# The compute event of each action that makes its change, and the state after it.
_ACTIONS: Final = {
    "create": ("compute__do_build_and_run_instance", "active"),
    "resize": ("compute_finish_resize", "active"),
    "revertResize": ("compute_finish_revert_resize", "active"),
    "stop": ("compute_stop_instance", "shutoff"),
    "start": ("compute_start_instance", "active"),
    "shelve": ("compute_shelve_instance", "shelved"),
    "unshelve": ("compute_unshelve_instance", "active"),
    "delete": ("compute_terminate_instance", None),
}
_NO_CHANGE: Final = frozenset({"confirmResize", "attach_volume", "detach_volume"})


def _flavors(
    db: dict[str, str], project: str
) -> tuple[dict[str, list[tuple[dict[str, Any], dict[str, Any]]]], dict[str, dict[str, Any]]]:
    """Each server's resizes (old size, new size) in order, and its current flavor's size."""
    columns = "{a}.name, {a}.vcpus, {a}.memory_mb, {a}.root_gb, {a}.ephemeral_gb"
    rows = mysql(
        f"SELECT m.instance_uuid, {columns.format(a='o')}, {columns.format(a='n')} "
        f"FROM {db['nova']}.migrations m JOIN {db['nova']}.instances i ON i.uuid = m.instance_uuid "
        f"JOIN {db['nova_api']}.flavors o ON o.id = m.old_instance_type_id "
        f"JOIN {db['nova_api']}.flavors n ON n.id = m.new_instance_type_id "
        f"WHERE i.project_id = '{project}' AND m.migration_type = 'resize' ORDER BY m.created_at, m.id"
    )
    resizes: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in rows:
        resizes.setdefault(str(row[0]), []).append((flavor_size(*row[1:6]), flavor_size(*row[6:11])))  # type: ignore[arg-type]
    current = {}
    for uuid, text in mysql(
        f"SELECT e.instance_uuid, e.flavor FROM {db['nova']}.instance_extra e "
        f"JOIN {db['nova']}.instances i ON i.uuid = e.instance_uuid WHERE i.project_id = '{project}'"
    ):
        cur = json.loads(str(text))["cur"]["nova_object.data"]
        current[str(uuid)] = flavor_size(
            cur["name"], cur["vcpus"], cur["memory_mb"], cur["root_gb"], cur["ephemeral_gb"]
        )
    return resizes, current


def read_servers(records: Records, db: dict[str, str], project: str) -> None:
    resizes, current = _flavors(db, project)
    servers = {
        str(r[0]): (instant(r[1]), instant(r[2]))
        for r in mysql(
            f"SELECT uuid, launched_at, terminated_at FROM {db['nova']}.instances "
            f"WHERE project_id = '{project}'"
        )
    }
    events: dict[str, dict[int, tuple[str, dict[str, tuple[datetime, datetime]]]]] = {}
    for uuid, action_id, action, event, start, finish in mysql(
        f"SELECT a.instance_uuid, a.id, a.action, e.event, e.start_time, e.finish_time "
        f"FROM {db['nova']}.instance_actions a "
        f"JOIN {db['nova']}.instance_actions_events e ON e.action_id = a.id "
        f"WHERE a.project_id = '{project}' ORDER BY a.id, e.id"
    ):
        by_action = events.setdefault(str(uuid), {})
        _, by_event = by_action.setdefault(int(str(action_id)), (str(action), {}))
        started, finished = instant(start), instant(finish)
        assert started is not None and finished is not None, f"nova's {action} of {uuid} has not finished"
        by_event[str(event)] = (started, finished)
    for uuid, (launched, terminated) in servers.items():
        key = ("instance", uuid)
        if launched is not None:
            records.platform_created[key] = launched
        flavors = resizes.get(uuid, [])
        size = flavors[0][0] if flavors else current[uuid]
        resized = iter(flavors)
        for action, by_event in events.get(uuid, {}).values():
            if action in _NO_CHANGE:
                continue
            if action not in _ACTIONS:
                raise AssertionError(f"nova recorded an action the oracle does not know: {action} of {uuid}")
            event, state = _ACTIONS[action]
            if action == "resize":
                size = next(resized)[1]
            elif action == "revertResize":
                size = _reverted(flavors, size)
            if state is not None:
                records.add(
                    key, Change(*window(*by_event[event]), (state, project, dict(size)), f"nova {action}")
                )
        if terminated is not None:
            # A shelved (offloaded) server is deleted by the API alone: its delete has no compute event.
            finish = max(
                (f for a, e in events.get(uuid, {}).values() if a == "delete" for _, f in e.values()),
                default=terminated,
            )
            records.add(key, Change(*window(terminated, finish), None, "nova terminated_at"))


def _reverted(flavors: list[tuple[dict[str, Any], dict[str, Any]]], size: dict[str, Any]) -> dict[str, Any]:
    """A revert goes back to the old flavor of the resize it undoes (the last one to ``size``)."""
    return next(old for old, new in reversed(flavors) if new == size)


@dataclass
class Snapshots:
    """What cinder's, neutron's and octavia's admin APIs answered for the project after each phase."""

    admin: Any
    project: str
    volumes: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    ips: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    lbs: list[dict[str, dict[str, Any]]] = field(default_factory=list)

    def take(self) -> None:
        self.volumes.append(
            {
                v.id: {"status": v.status, "size": v.size, "type": v.volume_type, "updated_at": v.updated_at}
                for v in self.admin.block_storage.volumes(all_projects=True, project_id=self.project)
            }
        )
        self.ips.append(
            {
                ip.id: {"created_at": ip.created_at, "address": ip.floating_ip_address}
                for ip in self.admin.network.ips(project_id=self.project)
            }
        )
        lbs = self.admin.load_balancer
        self.lbs.append(
            {
                lb.id: {
                    "status": lb.provisioning_status,
                    "created_at": lb.created_at,
                    "updated_at": lb.updated_at,
                    # The load balancer's own lists: octavia's listener listing ignores a balancer filter.
                    "listeners": {x["id"]: lbs.get_listener(x["id"]).created_at for x in lb.listeners or []},
                    "pools": {x["id"]: lbs.get_pool(x["id"]).created_at for x in lb.pools or []},
                }
                for lb in lbs.load_balancers(project_id=self.project)
            }
        )


def read_volumes(records: Records, db: dict[str, str], project: str, snapshots: Snapshots) -> None:
    rows = mysql(
        f"SELECT id, created_at, launched_at, deleted_at FROM {db['cinder']}.volumes "
        f"WHERE project_id = '{project}'"
    )
    for vid, created, launched, deleted in rows:
        key = ("volume", str(vid))
        created_at, launched_at = instant(created), instant(launched)
        assert created_at is not None and launched_at is not None, f"cinder never made volume {vid} available"
        records.platform_created[key] = created_at
        before: Facts | None = None
        for phase, snapshot in enumerate(snapshots.volumes):
            row = snapshot.get(str(vid))
            if row is None or row["status"] not in ("available", "in-use"):
                continue
            facts = (row["status"], project, {"size_gb": row["size"], "type": row["type"]})
            if facts == before:
                continue
            at = launched_at if before is None else instant(row["updated_at"])
            assert at is not None
            records.add(
                key,
                Change(
                    *window(at),
                    facts,
                    f"cinder {'launched_at' if before is None else 'updated_at'} after phase {phase}",
                ),
            )
            before = facts
        if deleted is not None:
            at = instant(deleted)
            assert at is not None
            records.add(key, Change(*window(at), None, "cinder deleted_at"))


def read_images(records: Records, db: dict[str, str], project: str) -> None:
    rows = mysql(
        f"SELECT i.id, i.size, i.created_at, i.deleted_at, MIN(l.created_at) FROM {db['glance']}.images i "
        f"LEFT JOIN {db['glance']}.image_locations l ON l.image_id = i.id "
        f"WHERE i.owner = '{project}' GROUP BY i.id, i.size, i.created_at, i.deleted_at"
    )
    for iid, size, created, deleted, located in rows:
        key = ("image", str(iid))
        created_at = instant(created)
        assert created_at is not None
        records.platform_created[key] = created_at
        records.add(
            key, Change(*window(created_at), ("active", project, {"size_gb": 0}), "glance created_at")
        )
        uploaded = instant(located)
        if size is not None and uploaded is not None:
            gb = _number(Decimal(size) / GIB)
            records.add(
                key,
                Change(*window(uploaded), ("active", project, {"size_gb": gb}), "glance location created_at"),
            )
        if deleted is not None:
            at = instant(deleted)
            assert at is not None
            records.add(key, Change(*window(at), None, "glance deleted_at"))


def read_ips(
    records: Records, project: str, snapshots: Snapshots, deleted: dict[str, tuple[datetime, datetime]]
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for snapshot in snapshots.ips:
        for iid, row in snapshot.items():
            seen.setdefault(iid, row)
    for iid, row in seen.items():
        key = ("floating_ip", iid)
        created_at = instant(row["created_at"])
        assert created_at is not None
        records.platform_created[key] = created_at
        version = 6 if ":" in str(row["address"]) else 4
        records.add(
            key,
            Change(*window(created_at), ("active", project, {"ip_version": version}), "neutron created_at"),
        )
        if iid in deleted:
            before, after = deleted[iid]
            # The second after its first 404 for the notification neutron sends as the delete commits.
            records.add(key, Change(before, after + SLACK / 2, None, "neutron's last answer and first 404"))


def read_lbs(records: Records, db: dict[str, str], project: str, snapshots: Snapshots) -> None:
    ended = {
        str(r[0]): instant(r[1])
        for r in mysql(
            f"SELECT id, updated_at FROM {db['octavia']}.load_balancer "
            f"WHERE project_id = '{project}' AND provisioning_status = 'DELETED'"
        )
    }
    first: dict[str, dict[str, Any]] = {}
    listeners: dict[str, dict[str, str]] = {}
    pools: dict[str, dict[str, str]] = {}
    for snapshot in snapshots.lbs:
        for lid, row in snapshot.items():
            if row["status"] == "ACTIVE":
                first.setdefault(lid, row)
            listeners.setdefault(lid, {}).update(row["listeners"])
            pools.setdefault(lid, {}).update(row["pools"])
    for lid, row in first.items():
        key = ("loadbalancer", lid)
        created_at, active_at = instant(row["created_at"]), instant(row["updated_at"])
        assert created_at is not None and active_at is not None
        records.platform_created[key] = created_at
        counts = {"listeners": 0, "pools": 0}
        records.add(
            key,
            Change(*window(active_at), ("active", project, dict(counts)), "octavia updated_at when ACTIVE"),
        )
        marks = sorted(
            [(instant(t), "listeners") for t in listeners[lid].values()]
            + [(instant(t), "pools") for t in pools[lid].values()]
        )
        for at, member in marks:
            assert at is not None
            counts[member] += 1
            records.add(
                key,
                Change(*window(at), ("active", project, dict(counts)), f"octavia {member[:-1]} created_at"),
            )
        if ended.get(lid) is not None:
            records.add(key, Change(*window(ended[lid]), None, "octavia updated_at when DELETED"))  # type: ignore[arg-type]
