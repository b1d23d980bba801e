"""Seeded random streams, identifiers, the period and the time profile of a month.

Every stream is a ``random.Random`` seeded from SHA-256 of (seed, stream name,
period[, cloud]), never from Python's ``hash()``, so the same arguments draw the
same numbers on any machine. Each workload of each tenant has its own stream:
drawing more in one never shifts another, and the fault and noise streams are
separate from the shape, so switching a fault on never changes the world.
"""

from __future__ import annotations

import bisect
import calendar
import hashlib
import ipaddress
import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from itertools import accumulate

from tally.core import utc_now

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_PERIOD = re.compile(r"^(\d{4})-(\d{2})$")


class GeneratorError(ValueError):
    """Arguments a month cannot be generated from; the message names the bad one."""


def stream(seed: int, name: str, period: str, cloud: str = "") -> random.Random:
    """The generator of one named stream; ``cloud`` salts only the identifier streams."""
    text = f"tally-sim/{seed}/{name}/{period}/{cloud}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(text).digest()[:16], "big"))


def draw_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def draw_hex32(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def parse_period(
    period: str, *, days: int | None = None, now: datetime | None = None
) -> tuple[datetime, datetime]:
    """``YYYY-MM`` to [from, to); ``days`` shortens it. A period that has not ended is refused."""
    match = _PERIOD.match(period) if isinstance(period, str) else None
    if match is None:
        raise GeneratorError(f"period {period!r} is not YYYY-MM")
    year, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12 or year < 1971:
        raise GeneratorError(f"period {period!r} is not a month")
    start = datetime(year, month, 1, tzinfo=UTC)
    length = calendar.monthrange(year, month)[1]
    if days is not None:
        if not 1 <= days <= length:
            raise GeneratorError(f"days {days} is outside 1..{length} for period {period}")
        length = days
    end = start + timedelta(days=length)
    current = now if now is not None else utc_now()
    if end > current:
        raise GeneratorError(f"period {period} has not ended yet (it ends {end.isoformat()})")
    return start, end


def is_working_day(day: datetime) -> bool:
    return day.weekday() < 5


def hour_weight(at: datetime) -> int:
    """10 on working days 07-19 UTC, 3 in the shoulders 05-07 and 19-23, 1 otherwise."""
    hour = at.hour
    if is_working_day(at) and 7 <= hour < 19:
        return 10
    if 5 <= hour < 7 or 19 <= hour < 23:
        return 3
    return 1


class TimeProfile:
    """Draws instants in a span weighted by the hourly profile of the real calendar."""

    def __init__(self, start: datetime, end: datetime) -> None:
        self.start = start
        self.end = end
        hours = []
        at = start
        while at < end:
            hours.append(at)
            at += HOUR
        self._hours = hours
        self._cumulative = list(accumulate(hour_weight(h) for h in hours))

    def draw(self, rng: random.Random, lo: datetime | None = None, hi: datetime | None = None) -> datetime:
        """An instant in [lo, hi) (default the whole span), whole microseconds."""
        lo = self.start if lo is None else max(lo, self.start)
        hi = self.end if hi is None else min(hi, self.end)
        if hi <= lo:
            return lo
        first = bisect.bisect_right(self._hours, lo) - 1
        last = bisect.bisect_left(self._hours, hi) - 1
        base = self._cumulative[first - 1] if first > 0 else 0
        point = base + rng.random() * (self._cumulative[last] - base)
        index = min(max(bisect.bisect_right(self._cumulative, point), first), last)
        hour_start = max(self._hours[index], lo)
        hour_end = min(self._hours[index] + HOUR, hi)
        span = int((hour_end - hour_start) / timedelta(microseconds=1))
        return hour_start + timedelta(microseconds=rng.randrange(max(span, 1)))


def jitter(rng: random.Random, lo_s: float, hi_s: float) -> timedelta:
    """A duration in [lo_s, hi_s] seconds, whole microseconds."""
    return timedelta(microseconds=rng.randrange(int(lo_s * 1e6), int(hi_s * 1e6) + 1))


class AddressPool:
    """Floating IPs: a permutation of 203.0.113.0/24, then further /24 blocks when a big month needs them."""

    _BLOCKS = ("203.0.113.0/24", "198.51.100.0/24", "192.0.2.0/24")

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._pool: list[str] = []
        self._block = 0

    def pop(self) -> str:
        if not self._pool:
            if self._block < len(self._BLOCKS):
                net = ipaddress.ip_network(self._BLOCKS[self._block])
            else:
                n = self._block - len(self._BLOCKS)
                net = ipaddress.ip_network(f"100.{64 + n // 256}.{n % 256}.0/24")
            self._block += 1
            pool = [str(a) for a in net]
            self._rng.shuffle(pool)
            self._pool = pool
        return self._pool.pop()
