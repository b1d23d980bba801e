"""Paged GET listings over httpx, read to the end.

Every OpenStack listing pages by ``marker`` (the id of the last item seen). The
next request is rebuilt from the original query plus that marker rather than
taken from the service's link, because link hosts and schemes are wrong behind
proxies and octavia drops filters from its links. A page is converted item by
item as it arrives, so a 100,000-item listing never holds its raw JSON at once;
the next page is asked for before the conversion starts (its marker is the page's
last id), so the service serves it while this one is converted. A listing thus
holds at most two pages and has one request in flight at a time, as before.

Each request may wait for its answer as long as the run's budget has left (the
enclosing cancel scope's deadline), so a slow page is waited for and a budget
that ends mid-listing is what stops it; only its connect has a bound of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import httpx
import orjson

T = TypeVar("T")
PAGE_LIMIT = 1000
# Items converted between two checkpoints of a page's conversion (see ``list_all``).
CONVERT_SLICE = 100
# The links key of a listing that sends no next link (cinder's volume types): paged until a page is empty.
UNTIL_EMPTY = "<until empty>"
MAX_REASON = 300
# A cloud that takes longer than this to accept a connection is down, whatever the budget.
CONNECT_TIMEOUT_S = 10.0
# Outside a budget (``tally check-cloud``), how long a request may wait for its answer.
UNBUDGETED_S = 60.0


def budget_left_s() -> float:
    """Seconds left before the enclosing cancel scope's deadline (the run's budget), else ``UNBUDGETED_S``."""
    deadline = anyio.current_effective_deadline()
    return UNBUDGETED_S if math.isinf(deadline) else max(0.001, deadline - anyio.current_time())


# Past the budget, so a request still waiting when it ends is cut off by the budget (which names the
# listings still running) rather than by its own timeout a moment before.
BEYOND_BUDGET_S = 1.0


def request_timeout() -> httpx.Timeout:
    """A request may wait as long as the run's budget has left (a slow page is not a failed one), and
    no connect longer than ``CONNECT_TIMEOUT_S``."""
    left = budget_left_s()
    return httpx.Timeout(left + BEYOND_BUDGET_S, connect=min(CONNECT_TIMEOUT_S, left + BEYOND_BUDGET_S))


def under(base: str, suffix: str, versioned: str) -> str:
    """``base`` + ``suffix``, inserting the API's version segment unless the catalog URL carries it."""
    if base.rstrip("/").endswith(versioned):
        return base.rstrip("/") + suffix
    return base.rstrip("/") + versioned + suffix


class ListingFailed(Exception):
    """A request of a listing failed: transport error, a non-2xx answer, or a body that is no listing."""


def _reason(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    if len(text) > MAX_REASON:
        text = text[:MAX_REASON] + "..."
    return f"GET {response.request.url.path} answered {response.status_code}: {text}"


async def get_json(
    client: httpx.AsyncClient,
    url: str,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """One GET answered 2xx with a JSON body; anything else raises ``ListingFailed``."""
    try:
        try:
            response = await client.get(url, params=params, headers=headers, timeout=request_timeout())
        except httpx.RemoteProtocolError:
            # The service closed a kept-alive connection as this request reused it (a proxy's or the
            # server's idle timeout, met on a busy host): the GET is idempotent, so it is asked once
            # more, on a new connection.
            response = await client.get(url, params=params, headers=headers, timeout=request_timeout())
    except httpx.HTTPError as exc:
        raise ListingFailed(f"GET {url}: {type(exc).__name__}: {exc}") from exc
    if not response.is_success:
        raise ListingFailed(_reason(response))
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise ListingFailed(f"GET {response.request.url.path}: the body is not JSON") from exc


def _has_next(body: Mapping[str, Any], links_key: str | None) -> bool:
    if links_key == UNTIL_EMPTY:
        return True
    if links_key is None:
        # glance: a relative URI under "next", present only when the page was full.
        return bool(body.get("next"))
    links = body.get(links_key) or []
    return any(isinstance(link, Mapping) and link.get("rel") == "next" for link in links)


class _NextPage:
    """The next page of a listing, asked for while the current one is converted: its body, or the
    exception its request raised (raised again where it is awaited, never inside the task group)."""

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._body: Any = None
        self._failure: Exception | None = None

    async def fetch(
        self,
        client: httpx.AsyncClient,
        url: str,
        query: Mapping[str, str],
        headers: Mapping[str, str] | None,
    ) -> None:
        try:
            self._body = await get_json(client, url, query, headers)
        except Exception as exc:  # handed to the listing, which raises it as the page's own failure
            self._failure = exc
        finally:
            self._done.set()

    async def body(self) -> Any:
        await self._done.wait()
        if self._failure is not None:
            raise self._failure
        return self._body


async def list_all(
    client: httpx.AsyncClient,
    url: str,
    *,
    key: str,
    links_key: str | None,
    convert: Callable[[Mapping[str, Any]], T | None],
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> list[T]:
    """Every item of a listing, converted; pages until the service gives no next link or an empty page."""
    query = dict(params or {})
    query["limit"] = str(PAGE_LIMIT)
    out: list[T] = []
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        try:
            body = await get_json(client, url, query, headers)
            while True:
                if not isinstance(body, Mapping) or not isinstance(body.get(key), list):
                    raise ListingFailed(f"GET {url}: the answer has no {key} list")
                items = body[key]
                following: _NextPage | None = None
                if items and _has_next(body, links_key):
                    marker = str(items[-1]["id"])
                    if marker == query.get("marker"):
                        # A service that ignores the marker answers the same page forever: refuse, never loop.
                        raise ListingFailed(
                            f"GET {url}: the page after marker {marker} ends at {marker} again"
                        )
                    query["marker"] = marker
                    following = _NextPage()
                    tg.start_soon(following.fetch, client, url, dict(query), headers)
                for start in range(0, len(items), CONVERT_SLICE):
                    # A checkpoint between slices lets the next page's request go out (and its answer
                    # come in) while this one is converted.
                    await anyio.lowlevel.checkpoint()
                    for item in items[start : start + CONVERT_SLICE]:
                        converted = convert(item)
                        if converted is not None:
                            out.append(converted)
                if following is None:
                    break
                body = await following.body()
        except Exception as exc:  # raised below as itself: the task group would wrap it in a group
            failure = exc
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return out
