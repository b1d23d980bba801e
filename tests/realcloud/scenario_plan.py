"""The real-cloud scenario's workload, drawn from a seed: which resources exist, what each does in each
phase, and which fault each phase runs under. Pure: the same seed and size give the same plan.

A phase does at most one operation per resource (a resize with its confirm or revert counts as one),
so every change a phase makes is one the next sync can see on its own. Phase 0 creates everything;
the later phases walk each resource through the transitions its service allows, by a state machine
per type. A plan is drawn again (from the same generator) until it covers every operation and every
fault, so any seed exercises the whole class, in another order, on other resources.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Final

SEED_ENV: Final = "TALLY_REALCLOUD_SEED"
SIZE_ENV: Final = "TALLY_REALCLOUD_SIZE"
DEFAULT_SEED: Final = 1

# The faults, one per phase (the other phases run with the collector up): notifications purged from
# the collector's queue, the collector down (its queue keeps the backlog, delivered late), the
# broker closing every connection of the cloud's vhost mid-phase, cinder's API down during the sync.
FAULTS: Final = ("purge", "collector-down", "broker", "cinder-down")

SERVER_OPS: Final = ("resize-confirm", "resize-revert", "stop", "start", "shelve", "unshelve", "delete")
VOLUME_OPS: Final = ("extend", "retype", "attach", "detach", "delete")
IMAGE_OPS: Final = ("upload", "deactivate", "reactivate", "delete")
LB_OPS: Final = ("listener", "pool", "delete")
IP_OPS: Final = ("delete",)

# What each state allows; "" is the state a resource is created in.
_SERVER: Final = {
    "active": ("resize-confirm", "resize-revert", "stop", "shelve", "delete"),
    "shutoff": ("start", "delete"),
    "shelved": ("unshelve", "delete"),
}
_SERVER_NEXT: Final = {"stop": "shutoff", "shelve": "shelved", "start": "active", "unshelve": "active"}
_VOLUME: Final = {"available": ("extend", "retype", "attach", "delete"), "in-use": ("detach",)}
_VOLUME_NEXT: Final = {"attach": "in-use", "detach": "available"}
_IMAGE: Final = {
    "queued": ("upload", "delete"),
    "active": ("deactivate", "delete"),
    "deactivated": ("reactivate", "delete"),
}
_IMAGE_NEXT: Final = {"upload": "active", "deactivate": "deactivated", "reactivate": "active"}


@dataclass(frozen=True, slots=True)
class Size:
    servers: int  # the first is the anchor: volumes attach to it, so it only stays active
    volumes: int
    ips: int
    images: int
    lbs: int
    phases: int  # phases after the create phase


SIZES: Final = {
    "ci": Size(servers=4, volumes=3, ips=2, images=2, lbs=1, phases=4),
    "bench": Size(servers=10, volumes=8, ips=4, images=4, lbs=2, phases=6),
}


@dataclass(frozen=True, slots=True)
class Plan:
    seed: int
    size_name: str
    size: Size
    # kind -> name -> the operation of each phase after the create ("" = none)
    ops: dict[str, dict[str, tuple[str, ...]]]
    faults: tuple[str, ...]  # per phase, the create phase first; "" = none
    volume_types: tuple[str, ...]  # each volume's type at creation, by volume index

    def names(self, kind: str) -> list[str]:
        return list(self.ops[kind])

    def at(self, phase: int) -> list[tuple[str, str, str]]:
        """(kind, name, operation) of the phase (1-based after the create phase)."""
        return [
            (kind, name, steps[phase - 1])
            for kind, by_name in self.ops.items()
            for name, steps in by_name.items()
            if steps[phase - 1]
        ]


def _walk(
    rng: random.Random,
    start: str,
    moves: dict[str, tuple[str, ...]],
    after: dict[str, str],
    phases: int,
    idle: float,
) -> tuple[str, ...]:
    state, steps = start, []
    for _ in range(phases):
        if state == "deleted" or rng.random() < idle:
            steps.append("")
            continue
        op = rng.choice(moves[state])
        steps.append(op)
        state = "deleted" if op == "delete" else after.get(op, state)
    return tuple(steps)


def _lb_walk(rng: random.Random, phases: int) -> tuple[str, ...]:
    left = ["listener", "pool"]
    steps: list[str] = []
    for _ in range(phases):
        if "delete" in steps or rng.random() < 0.25:
            steps.append("")
        elif left and rng.random() < 0.8:
            steps.append(left.pop(0))
        else:
            steps.append("delete")
    return tuple(steps)


def _draw(rng: random.Random, size: Size) -> tuple[dict[str, dict[str, tuple[str, ...]]], tuple[str, ...]]:
    p = size.phases
    anchor = ("",) * p
    ops = {
        "server": {"srv-0": anchor}
        | {f"srv-{i}": _walk(rng, "active", _SERVER, _SERVER_NEXT, p, 0.15) for i in range(1, size.servers)},
        "volume": {
            f"vol-{i}": _walk(rng, "available", _VOLUME, _VOLUME_NEXT, p, 0.2) for i in range(size.volumes)
        },
        "ip": {f"ip-{i}": _walk(rng, "active", {"active": IP_OPS}, {}, p, 0.6) for i in range(size.ips)},
        "image": {f"img-{i}": _walk(rng, "queued", _IMAGE, _IMAGE_NEXT, p, 0.2) for i in range(size.images)},
        "lb": {f"lb-{i}": _lb_walk(rng, p) for i in range(size.lbs)},
    }
    faults = list(FAULTS) + [""] * (p + 1 - len(FAULTS))
    rng.shuffle(faults)
    return ops, tuple(faults)


def _covers(ops: dict[str, dict[str, tuple[str, ...]]], faults: tuple[str, ...]) -> bool:
    wanted = {
        "server": set(SERVER_OPS),
        "volume": set(VOLUME_OPS),
        "ip": set(IP_OPS),
        "image": set(IMAGE_OPS),
        "lb": set(LB_OPS),
    }
    done = all(wanted[k] <= {op for steps in ops[k].values() for op in steps} for k in wanted)
    return done and set(FAULTS) <= set(faults)


def draw_plan(seed: int, size_name: str = "ci") -> Plan:
    """The plan of ``seed``: the first draw of its generator that covers every operation and fault."""
    if size_name not in SIZES:
        raise ValueError(f"{SIZE_ENV} must be one of {', '.join(SIZES)}, not {size_name!r}")
    size = SIZES[size_name]
    rng = random.Random(seed)
    for _ in range(10_000):
        ops, faults = _draw(rng, size)
        if _covers(ops, faults):
            types = tuple(rng.choice(("tier-a", "tier-b")) for _ in range(size.volumes))
            return Plan(seed, size_name, size, ops, faults, types)
    raise ValueError(f"seed {seed} draws no plan that covers every operation")


def plan_from_env() -> Plan:
    text = os.environ.get(SEED_ENV, str(DEFAULT_SEED))
    if not text.isdigit():
        raise ValueError(f"{SEED_ENV} must be a non-negative integer, not {text!r}")
    return draw_plan(int(text), os.environ.get(SIZE_ENV, "ci"))
