"""Pieces every fake service shares: timestamp formats, JSON answers, limits, and the pager.

The pager walks one type's resources in id order from the position after the
marker, keeping those a predicate admits, until the page is full. A full listing
therefore reads each resource once, and a page costs a bisection plus the
resources it skips; nothing per request outlives the request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlencode

import orjson
from quart import Response

from ..world import Resource, Segment, World

# The world's instants are UTC already, so isoformat with the offset cut off does the job, several times
# cheaper than strftime: a page formats thousands of them.


def _iso(value: datetime, timespec: str) -> str:
    text = value.isoformat(timespec=timespec)
    if text.endswith("+00:00"):
        return text[:-6]
    if value.tzinfo is None:
        return text
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec=timespec)


def z_seconds(value: datetime) -> str:
    """Nova, neutron and glance: seconds and ``Z``."""
    return _iso(value, "seconds") + "Z"


def naive_micro(value: datetime) -> str:
    """Cinder and nova's usage fields: six-digit fraction, no zone."""
    return _iso(value, "microseconds")


def naive_seconds(value: datetime) -> str:
    """Octavia: seconds, no zone."""
    return _iso(value, "seconds")


def parse_time_param(text: str) -> datetime | None:
    """An ISO 8601 query instant as oslo's parse_isotime reads it (a naive one is UTC); None if invalid."""
    candidate = text.strip()
    if candidate[-1:] in ("z", "Z"):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(candidate)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    response = Response(orjson.dumps(body), status=status, content_type="application/json")
    if headers:
        for key, value in headers.items():
            response.headers[key] = value
    return response


def parse_limit(text: str | None) -> int | str | None:
    """``None`` when absent; an int >= 0; or the offending text when it is not one."""
    if text is None:
        return None
    if not text.isdigit():
        return text
    return int(text)


def truthy(value: str | None) -> bool | None:
    """oslo's bool_from_string (strict): True/False, or None when not a boolean word."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("", "1", "t", "true", "on", "y", "yes"):
        return True
    if lowered in ("0", "f", "false", "off", "n", "no"):
        return False
    return None


Admit = Callable[[Resource], Segment | bool | None]


def page(
    world: World,
    resource_type: str,
    start: int,
    limit: int,
    admit: Callable[[Resource], Any],
    *,
    at: datetime,
) -> list[tuple[Resource, Any]]:
    """Up to ``limit`` resources from index ``start`` for which ``admit`` returns something truthy.

    A resource created after ``at`` (the instant the listing answers at) is passed over without
    asking ``admit``, which would leave it out: most of a month's resources, most of the month."""
    resources = world.of_type(resource_type)
    out: list[tuple[Resource, Any]] = []
    index = start
    total = len(resources)
    while index < total and len(out) < limit:
        resource = resources[index]
        index += 1
        if resource.created_at > at:
            continue
        seen = admit(resource)
        if seen:
            out.append((resource, seen))
    return out


def query_string(params: Mapping[str, str] | list[tuple[str, str]]) -> str:
    items = sorted(params.items()) if isinstance(params, Mapping) else list(params)
    return urlencode(items)


def shifted(value: datetime, skew: timedelta) -> datetime:
    return value + skew if skew else value


_VERSION_RE: Final = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")


def api_fault(code: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """The error body nova and cinder share: ``{"badRequest": {"code": 400, "message": ...}}``, with the
    content type their fault wrapper writes (charset included)."""
    names = {
        400: "badRequest",
        401: "unauthorized",
        403: "forbidden",
        404: "itemNotFound",
        503: "serviceUnavailable",
    }
    response = json_response(
        {names.get(code, "computeFault"): {"code": code, "message": message}}, code, headers
    )
    response.headers["Content-Type"] = "application/json; charset=UTF-8"
    return response


def version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def negotiate_microversion(
    headers: Any,
    *,
    services: tuple[str, ...],
    legacy_header: str | None,
    minimum: tuple[int, int],
    maximum: tuple[int, int],
) -> tuple[int, int] | Response:
    """The microversion a request asks for (the minimum when none), or the service's 400/406 answer.

    ``OpenStack-API-Version`` names the service; nova still reads its older header when that one is
    silent, which ``legacy_header`` names.
    """
    value = None
    modern = headers.get("OpenStack-API-Version")
    if modern:
        for part in modern.split(","):
            service, _, version = part.strip().partition(" ")
            if service.lower() in services:
                value = version.strip()
    if value is None and legacy_header is not None:
        value = headers.get(legacy_header)
    if not value:
        return minimum
    if value.lower() == "latest":
        return maximum
    match = _VERSION_RE.match(value)
    if match is None:
        return api_fault(
            400, f"API Version String {value} is of invalid format. Must be of format MajorNum.MinorNum."
        )
    version = (int(match.group(1)), int(match.group(2)))
    if not minimum <= version <= maximum:
        # The refusal still names the version asked for, in the headers a success would carry.
        echoed = {"OpenStack-API-Version": f"{services[0]} {value}", "Vary": "OpenStack-API-Version"}
        if legacy_header is not None:
            echoed[legacy_header] = value
            echoed["Vary"] += f", {legacy_header}"
        return api_fault(
            406,
            f"Version {value} is not supported by the API. Minimum is {version_text(minimum)} "
            f"and maximum is {version_text(maximum)}.",
            echoed,
        )
    return version
