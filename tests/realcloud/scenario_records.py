"""What the services themselves recorded of the scenario's project: the oracle's evidence.

Every change is a :class:`Change`: the facts a resource has after it (None: gone) and the window in
which the service's own records place it, ``[lo, hi)``. The services write their instants at whole
seconds (MariaDB ``DATETIME``) and notify just after writing them, so a window runs from the record's
second to :data:`SLACK` past the last second the record names. Where the phase that made a change is
known (the first snapshot that shows it), the window opens no earlier than that phase's operations
began: a change recorded in the very second of the previous phase's sync, but made after it, is
then not placed before that sync (which could not have seen it). Read from:

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
from collections.abc import Sequence
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
    # The instant the platform's listing reports for the change, which the seeds' rules book even where
    # the window opens later: nova's ``terminated_at`` is stored to the second, so a reported delete is
    # dated at the second's start though the phase that made it began inside that second.
    reported: datetime | None = None


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


def window(
    lo: datetime, hi: datetime | None = None, after: datetime | None = None
) -> tuple[datetime, datetime]:
    """From the record's second to SLACK past the last second it names: the second the record floors
    to, and one more for the notification the service sends after writing it. ``after``: an instant
    the change is known to follow (its phase's operations began then); the window opens there when
    that lies inside the record's second."""
    return (lo if after is None else max(lo, after)), (hi or lo) + SLACK


# Which of the plan's operations make each change nova's and glance's rows record.
MADE_BY: Final = {
    "create": frozenset({"create"}),
    "resize": frozenset({"resize-confirm", "resize-revert"}),
    "revertResize": frozenset({"resize-revert"}),
    "stop": frozenset({"stop"}),
    "start": frozenset({"start"}),
    "shelve": frozenset({"shelve"}),
    "unshelve": frozenset({"unshelve"}),
    "delete": frozenset({"delete"}),
    "upload": frozenset({"upload"}),
}


def made_after(
    second: datetime, made_by: frozenset[str], ops: Sequence[str], began: Sequence[datetime]
) -> datetime | None:
    """When the phase that made a change a row records at ``second`` began, where that is inside the
    second and only that phase's operation on the resource (``ops``, by phase) makes such a change; None
    where the row alone cannot tell (another phase still running in that second made one too)."""
    for k in range(1, min(len(ops), len(began))):
        if not second < began[k] < second + timedelta(seconds=1) or ops[k] not in made_by:
            continue
        earlier = [j for j in range(k) if began[j + 1] > second and ops[j] in made_by]
        return None if earlier else began[k]
    return None


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


def read_servers(
    records: Records,
    db: dict[str, str],
    project: str,
    ops: dict[str, Sequence[str]] | None = None,
    began: Sequence[datetime] = (),
) -> None:
    """Each server's changes from nova's rows; ``ops`` (by server, the plan's operation of each phase)
    and ``began`` (each phase's start) open a window recorded in a phase's first second at that start."""
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
                start, finish = by_event[event]
                after = made_after(start, MADE_BY[action], (ops or {}).get(uuid, ()), began)
                records.add(
                    key, Change(*window(start, finish, after), (state, project, dict(size)), f"nova {action}")
                )
        if terminated is not None:
            finished = [f for a, e in events.get(uuid, {}).values() if a == "delete" for _, f in e.values()]
            records.add(key, server_gone(terminated, finished, (ops or {}).get(uuid, ()), began))


def server_gone(
    terminated: datetime, finished: Sequence[datetime], ops: Sequence[str], began: Sequence[datetime]
) -> Change:
    """The delete of a server nova records at ``terminated`` (to the second), its compute events
    finished at ``finished`` (none for a shelved, offloaded server: the API alone deletes it). The
    deleted-servers listing reports that second, so a reported delete is booked there (``reported``)."""
    after = made_after(terminated, MADE_BY["delete"], ops, began)
    finish = max(finished, default=terminated)
    return Change(*window(terminated, finish, after), None, "nova terminated_at", reported=terminated)


def _reverted(flavors: list[tuple[dict[str, Any], dict[str, Any]]], size: dict[str, Any]) -> dict[str, Any]:
    """A revert goes back to the old flavor of the resize it undoes (the last one to ``size``)."""
    return next(old for old, new in reversed(flavors) if new == size)


@dataclass
class Snapshots:
    """What cinder's, neutron's and octavia's admin APIs answered for the project after each phase
    (index: the phase), and when each phase's operations began (the first request of the phase)."""

    admin: Any
    project: str
    volumes: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    ips: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    lbs: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    began: list[datetime] = field(default_factory=list)

    def begin(self) -> None:
        """Mark the start of a phase's operations: no change of the phase precedes it."""
        self.began.append(datetime.now(UTC))

    def began_at(self, phase: int) -> datetime | None:
        """When ``phase`` began its operations (None: a phase never run, or not marked)."""
        return self.began[phase] if 0 <= phase < len(self.began) else None

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


def _last_listed(snapshots: list[dict[str, dict[str, Any]]], rid: str) -> int:
    """The last phase whose snapshot lists ``rid`` (-1: none): a delete is made in a later phase."""
    return max((phase for phase, snapshot in enumerate(snapshots) if rid in snapshot), default=-1)


def read_volumes(records: Records, db: dict[str, str], project: str, snapshots: Snapshots) -> None:
    rows = mysql(
        f"SELECT id, created_at, launched_at, deleted_at FROM {db['cinder']}.volumes "
        f"WHERE project_id = '{project}'"
    )
    for vid, created, launched, deleted in rows:
        created_at, launched_at = instant(created), instant(launched)
        assert created_at is not None and launched_at is not None, f"cinder never made volume {vid} available"
        records.platform_created[("volume", str(vid))] = created_at
        volume_changes(records, project, snapshots, str(vid), launched_at, instant(deleted))


def volume_changes(
    records: Records,
    project: str,
    snapshots: Snapshots,
    vid: str,
    launched_at: datetime,
    deleted_at: datetime | None,
) -> None:
    """A volume's changes: available at ``launched_at``, each change of facts a snapshot shows at the
    ``updated_at`` it shows, gone at ``deleted_at``."""
    key = ("volume", vid)
    before: Facts | None = None
    for phase, snapshot in enumerate(snapshots.volumes):
        row = snapshot.get(vid)
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
                *window(at, after=snapshots.began_at(phase)),
                facts,
                f"cinder {'launched_at' if before is None else 'updated_at'} after phase {phase}",
            ),
        )
        before = facts
    if deleted_at is not None:
        after = snapshots.began_at(_last_listed(snapshots.volumes, vid) + 1)
        records.add(key, Change(*window(deleted_at, after=after), None, "cinder deleted_at"))


def read_images(
    records: Records,
    db: dict[str, str],
    project: str,
    ops: dict[str, Sequence[str]] | None = None,
    began: Sequence[datetime] = (),
) -> None:
    """Each image's changes from glance's rows (nova's shelve snapshots among them); ``ops`` and
    ``began`` as for :func:`read_servers`."""
    rows = mysql(
        f"SELECT i.id, i.size, i.created_at, i.deleted_at, MIN(l.created_at) FROM {db['glance']}.images i "
        f"LEFT JOIN {db['glance']}.image_locations l ON l.image_id = i.id "
        f"WHERE i.owner = '{project}' GROUP BY i.id, i.size, i.created_at, i.deleted_at"
    )
    image_changes(records, project, rows, ops or {}, began)


def image_changes(
    records: Records,
    project: str,
    rows: list[list[str | None]],
    ops: dict[str, Sequence[str]],
    began: Sequence[datetime],
) -> None:
    """From glance's rows (id, size, created_at, deleted_at, first location's created_at): created at
    size 0, the upload's size, gone."""
    for iid, size, created, deleted, located in rows:
        key = ("image", str(iid))
        planned = ops.get(str(iid), ())

        def bounded(
            at: datetime, made_by: str, planned: Sequence[str] = planned
        ) -> tuple[datetime, datetime]:
            return window(at, after=made_after(at, MADE_BY[made_by], planned, began))

        created_at = instant(created)
        assert created_at is not None
        records.platform_created[key] = created_at
        records.add(
            key,
            Change(*bounded(created_at, "create"), ("active", project, {"size_gb": 0}), "glance created_at"),
        )
        uploaded = instant(located)
        if size is not None and uploaded is not None:
            gb = _number(Decimal(size) / GIB)
            records.add(
                key,
                Change(
                    *bounded(uploaded, "upload"),
                    ("active", project, {"size_gb": gb}),
                    "glance location created_at",
                ),
            )
        if deleted is not None:
            at = instant(deleted)
            assert at is not None
            records.add(key, Change(*bounded(at, "delete"), None, "glance deleted_at"))


def read_ips(
    records: Records, project: str, snapshots: Snapshots, deleted: dict[str, tuple[datetime, datetime]]
) -> None:
    seen: dict[str, tuple[int, dict[str, Any]]] = {}
    for phase, snapshot in enumerate(snapshots.ips):
        for iid, row in snapshot.items():
            seen.setdefault(iid, (phase, row))
    for iid, (phase, row) in seen.items():
        key = ("floating_ip", iid)
        created_at = instant(row["created_at"])
        assert created_at is not None
        records.platform_created[key] = created_at
        version = 6 if ":" in str(row["address"]) else 4
        records.add(
            key,
            Change(
                *window(created_at, after=snapshots.began_at(phase)),
                ("active", project, {"ip_version": version}),
                "neutron created_at",
            ),
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
    lb_changes(records, project, snapshots, ended)


def lb_changes(
    records: Records, project: str, snapshots: Snapshots, ended: dict[str, datetime | None]
) -> None:
    """Each balancer's changes from the snapshots (ACTIVE, then a listener or a pool at a time, each
    from the phase whose snapshot first shows it) and octavia's DELETED row (``ended``)."""
    first: dict[str, tuple[int, dict[str, Any]]] = {}
    members: dict[str, dict[str, tuple[str, str, int]]] = {}  # by balancer: id -> (kind, created, phase)
    for phase, snapshot in enumerate(snapshots.lbs):
        for lid, row in snapshot.items():
            if row["status"] == "ACTIVE":
                first.setdefault(lid, (phase, row))
            for kind in ("listeners", "pools"):
                for mid, created in row[kind].items():
                    members.setdefault(lid, {}).setdefault(mid, (kind, created, phase))
    for lid, (phase, row) in first.items():
        key = ("loadbalancer", lid)
        created_at, active_at = instant(row["created_at"]), instant(row["updated_at"])
        assert created_at is not None and active_at is not None
        records.platform_created[key] = created_at
        counts = {"listeners": 0, "pools": 0}
        records.add(
            key,
            Change(
                *window(active_at, after=snapshots.began_at(phase)),
                ("active", project, dict(counts)),
                "octavia updated_at when ACTIVE",
            ),
        )
        marks = sorted((instant(t), kind, seen) for kind, t, seen in members.get(lid, {}).values())
        for at, member, seen in marks:
            assert at is not None
            counts[member] += 1
            records.add(
                key,
                Change(
                    *window(at, after=snapshots.began_at(seen)),
                    ("active", project, dict(counts)),
                    f"octavia {member[:-1]} created_at (first seen after phase {seen})",
                ),
            )
        deleted_at = ended.get(lid)
        if deleted_at is not None:
            after = snapshots.began_at(_last_listed(snapshots.lbs, lid) + 1)
            records.add(
                key, Change(*window(deleted_at, after=after), None, "octavia updated_at when DELETED")
            )
