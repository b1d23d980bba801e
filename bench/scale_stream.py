"""The synthetic stream of ``bench.scale``: a year of one large cloud's events, as the collector stores them.

Pure (no I/O): ``Stream`` draws each next event (a create, a delete at the target population, or an
update, by the mixes below) and keeps what the fold would hold for every resource it touched, so that
the bench can write the projection rows the fold gives next to the events.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from bench.usage import CLOUD
from tally.core import format_instant
from tally.core.internals import DELETED

YEAR0 = datetime(2025, 11, 1, tzinfo=UTC)
YEAR_MS = 365 * 86_400_000
RECEIVED_LAG = timedelta(milliseconds=1500)
PROJECTS = [uuid.UUID(int=random.Random(i).getrandbits(128)).hex for i in range(2_000)]
FLAVORS = [(1, 2, 20, "m1.small"), (2, 4, 40, "m1.medium"), (4, 8, 80, "m1.large"), (8, 16, 160, "m1.xlarge")]
CREATE_MIX = (("instance", 40), ("volume", 40), ("floating_ip", 12), ("image", 6), ("loadbalancer", 2))
# Updates by type (floating IPs and images have none in the collector's table).
UPDATE_MIX = (("instance", 70), ("volume", 22), ("loadbalancer", 8))
CREATE = {
    "instance": ("compute.instance.create.end", "compute.instance.create.end", "active"),
    "volume": ("volume.create.end", "volume.create.end", "available"),
    "floating_ip": ("floatingip.create.end", "floatingip.create.end", "active"),
    "image": ("image.create", "image.create", "active"),
    "loadbalancer": ("octavia.loadbalancer.create.end", "octavia.loadbalancer.create.end", "active"),
}
DELETE = {
    "instance": ("compute.instance.delete.end", "compute.instance.delete.end"),
    "volume": ("volume.delete.end", "volume.delete.end"),
    "floating_ip": ("floatingip.delete.end", "floatingip.delete.end"),
    "image": ("image.delete", "image.delete"),
    "loadbalancer": ("octavia.loadbalancer.delete.end", "octavia.loadbalancer.delete.end"),
}


@dataclass(slots=True)
class Resource:
    """What the fold would hold for one resource, kept as the stream writes its events."""

    rtype: str
    rid: str
    project: str
    state: str
    size: dict[str, Any]
    created: datetime
    deleted: datetime | None = None
    last_type: str = ""
    last_at: datetime = YEAR0
    last_payload: str = "{}"
    last_id: str = ""
    slot: int = -1  # index in its type's live list

    def copy_row(self) -> str:
        """The projection row as a line of ``COPY current_resources`` text."""
        deleted = self.deleted.isoformat() if self.deleted else "\\N"
        size = orjson.dumps(self.size).decode()
        return (
            f"{CLOUD}\topenstack\t{self.rtype}\t{self.rid}\t{self.project}\t{self.state}\t{size}\t"
            f"{self.created.isoformat()}\t{deleted}\t{self.last_type}\t{self.last_at.isoformat()}\t"
            f"{self.last_payload}\t{self.created.isoformat()}\t{(self.last_at + RECEIVED_LAG).isoformat()}\t"
            f"{self.last_id}\n"
        )


@dataclass(frozen=True, slots=True)
class Event:
    event_id: str
    at: datetime
    event_type: str
    resource: Resource
    payload: dict[str, Any]

    def copy_line(self) -> str:
        r = self.resource
        return (
            f"{self.event_id}\t{self.at.isoformat()}\t{(self.at + RECEIVED_LAG).isoformat()}\t"
            f"{self.event_type}\topenstack\t{CLOUD}\t{r.rtype}\t{r.rid}\t{r.project}\tcollector\t"
            f"{orjson.dumps(self.payload).decode()}\n"
        )

    def wire(self) -> dict[str, Any]:
        r = self.resource
        return {
            "event_id": self.event_id,
            "timestamp": format_instant(self.at),
            "event_type": self.event_type,
            "platform": "openstack",
            "cloud": CLOUD,
            "resource_type": r.rtype,
            "resource_id": r.rid,
            "project_id": r.project,
            "payload": self.payload,
        }


@dataclass
class Stream:
    """The year's events in timestamp order, ``total`` of them spread evenly over the year from YEAR0."""

    total: int
    live_target: int
    seed: int = 1
    count: int = 0
    live: dict[str, list[Resource]] = field(default_factory=lambda: {t: [] for t, _ in CREATE_MIX})
    touched: dict[str, Resource] = field(default_factory=dict)  # since the last projection flush
    sample: list[Resource] = field(default_factory=list)  # a reservoir of every resource ever created
    created: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.live_count = 0

    def _uuid(self) -> str:
        """A random version-4 UUID (oslo message ids and OpenStack resource ids look like these)."""
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def now(self) -> datetime:
        return YEAR0 + timedelta(milliseconds=self.count * YEAR_MS // self.total)

    def next(self) -> Event:
        at = self.now()
        self.count += 1
        rng = self.rng
        ramping = self.live_count < self.live_target
        roll = rng.random()
        if roll < (0.5 if ramping else 0.12) or self.live_count == 0:
            event = self._create(at)
        elif roll > 1 - 0.12 * self.live_count / self.live_target:
            event = self._delete(at, CREATE_DRAW[int(rng.random() * 100)])
        else:
            event = self._update(at, UPDATE_DRAW[int(rng.random() * 100)])
        r = event.resource
        r.last_type, r.last_at, r.last_id = event.event_type, at, event.event_id
        r.last_payload = orjson.dumps(event.payload).decode()
        self.touched[r.rid] = r
        return event

    def _size(self, rtype: str) -> dict[str, Any]:
        rng = self.rng
        if rtype == "instance":
            vcpus, ram, disk, name = rng.choice(FLAVORS)
            return {"vcpus": vcpus, "ram_gb": ram, "disk_gb": disk, "flavor": name}
        if rtype == "volume":
            return {"size_gb": rng.randrange(10, 500, 10), "type": rng.choice(("ssd", "hdd", "vault"))}
        if rtype == "floating_ip":
            return {"ip_version": 4}
        if rtype == "image":
            return {"size_gb": rng.randrange(1, 40)}
        return {"listeners": rng.randrange(1, 4), "pools": rng.randrange(1, 3)}

    def _create(self, at: datetime) -> Event:
        rtype = CREATE_DRAW[int(self.rng.random() * 100)]
        stored, oslo, state = CREATE[rtype]
        size = self._size(rtype)
        r = Resource(rtype, self._uuid(), self.rng.choice(PROJECTS), state, size, at)
        kind = self.live[rtype]
        r.slot = len(kind)
        kind.append(r)
        self.live_count += 1
        self.created += 1
        if len(self.sample) < 20_000:
            self.sample.append(r)
        elif (j := self.rng.randrange(self.created)) < len(self.sample):
            self.sample[j] = r
        payload = {"state": state, "size": size, "provider": {"oslo_event_type": oslo}}
        return Event(self._uuid(), at, stored, r, payload)

    def _pick(self, rtype: str) -> Resource | None:
        kind = self.live[rtype]
        return kind[self.rng.randrange(len(kind))] if kind else None

    def _delete(self, at: datetime, rtype: str) -> Event:
        r = self._pick(rtype)
        if r is None:
            return self._create(at)
        kind = self.live[rtype]
        last = kind.pop()
        if last is not r:
            kind[r.slot] = last
            last.slot = r.slot
        self.live_count -= 1
        r.state, r.deleted = DELETED, at
        stored, oslo = DELETE[rtype]
        return Event(self._uuid(), at, stored, r, {"provider": {"oslo_event_type": oslo}})

    def _update(self, at: datetime, rtype: str) -> Event:
        r = self._pick(rtype)
        if r is None:
            return self._create(at)
        roll = self.rng.random()
        payload: dict[str, Any]
        if rtype == "instance" and roll < 0.1:
            r.size, r.state = self._size("instance"), "active"
            stored, oslo = "compute.instance.resize.confirm.end", "compute.instance.resize.confirm.end"
            payload = {"state": r.state, "size": r.size}
        elif rtype == "instance":
            on = r.state != "active"
            r.state = "active" if on else "shutoff"
            stored = "compute.instance.power_on" if on else "compute.instance.power_off"
            oslo, payload = stored + ".end", {"state": r.state}
        elif rtype == "volume" and roll < 0.2:
            r.size = {**r.size, "size_gb": r.size["size_gb"] + 10}
            stored = oslo = "volume.resize.end"
            payload = {"state": r.state, "size": r.size}
        elif rtype == "volume":
            r.state = "available" if r.state == "in-use" else "in-use"
            stored = oslo = "volume.detach.end" if r.state == "available" else "volume.attach.end"
            payload = {"state": r.state}
        else:
            stored = oslo = "octavia.loadbalancer.update.end"
            payload = {"state": "active"}
        payload["provider"] = {"oslo_event_type": oslo}
        return Event(self._uuid(), at, stored, r, payload)


# The mixes as tables of 100 drawn by index: random.choices costs more than the rest of an event.
CREATE_DRAW = [t for t, weight in CREATE_MIX for _ in range(weight)]
UPDATE_DRAW = [t for t, weight in UPDATE_MIX for _ in range(weight)]
