"""The request context every fake service handler gets: the world at the answer instant and the caller."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from werkzeug.datastructures import MultiDict

from ..world import World
from ._faults import ApiFaults
from ._keystone import Token


@dataclass(frozen=True)
class Ctx:
    """``instant``: where the world is read (``min(virtual_now, period_to)``); ``skew``: how far the
    platform's clock runs ahead, added to every timestamp shown; ``base_url``: scheme and host the
    caller used; ``path``: the whole request path; ``args``: the query."""

    world: World
    instant: datetime
    skew: timedelta
    token: Token
    base_url: str
    path: str
    args: MultiDict[str, str]
    faults: ApiFaults
