"""The fake cloud's service routes as plain ASGI: a request read into a :class:`FakeCall`, a table of routes,
and the front that answers the routes it knows before Quart sees the request.

A sync's listings are most of what the fake cloud serves, and Quart's request context, signals,
URL adapter and response processing cost more than building most of the pages. Each route of the
table is registered twice, with the front (a GET to one of its paths is answered from the ASGI
scope) and with Quart (the same handler, the call read from Quart's request): whatever the front
does not answer (another method, HEAD, a path it does not hold, the control endpoint, keystone)
falls through to Quart, whose test client also reaches every route. Both ways send the same
Quart :class:`Response`: its status, its headers and its body, so the bytes on the wire are the same.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope
from quart import Quart, Response, request
from quart.utils import encode_headers
from quart.wrappers.response import DataBody
from werkzeug.datastructures import Headers, ImmutableMultiDict, MultiDict

ASGIApp = Callable[[Scope, ASGIReceiveCallable, ASGISendCallable], Awaitable[None]]
Handler = Callable[..., Awaitable[Response]]

#: ``<name>`` in a rule: one path segment, as werkzeug's default converter reads it.
_PARAMETER = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True, slots=True)
class FakeCall:
    """What a route reads of its request: ``base_url`` is the scheme and host the caller used."""

    method: str
    path: str
    args: MultiDict[str, str]
    headers: Headers
    base_url: str


def call_of_request() -> FakeCall:
    """The call of the request Quart is handling."""
    host = request.headers.get("Host") or request.host
    return FakeCall(request.method, request.path, request.args, request.headers, f"{request.scheme}://{host}")


def call_of_scope(scope: HTTPScope) -> FakeCall:
    """The call of an ASGI HTTP/1.1 scope (so it names its Host), read as Quart reads its request."""
    headers = Headers()
    headers["Remote-Addr"] = (scope.get("client") or ["<local>"])[0]
    for name, value in scope["headers"]:
        headers.add(name.decode("latin1").title(), value.decode("latin1"))
    args: MultiDict[str, str] = ImmutableMultiDict(
        parse_qsl(scope["query_string"].decode(), keep_blank_values=True, errors="werkzeug.url_quote")
    )
    return FakeCall(
        scope["method"], scope["path"], args, headers, f"{scope['scheme']}://{headers.get('Host')}"
    )


class Routes:
    """The service routes: each registered with Quart and, for GET, with the front."""

    def __init__(self, app: Quart) -> None:
        self._app = app
        self._static: dict[str, Handler] = {}
        self._patterns: list[tuple[re.Pattern[str], Handler]] = []

    def get(self, *rules: str) -> Callable[[Handler], Handler]:
        """Register ``handler(call, **parameters)`` for GET on every rule."""

        def register(handler: Handler) -> Handler:
            for rule in rules:
                self._app.add_url_rule(
                    rule, f"{handler.__name__}:{rule}", _quart_view(handler), methods=["GET"]
                )
                if "<" in rule:
                    self._patterns.append((_pattern_of(rule), handler))
                else:
                    self._static[rule] = handler
            return handler

        return register

    def match(self, path: str) -> tuple[Handler, dict[str, str]] | None:
        handler = self._static.get(path)
        if handler is not None:
            return handler, {}
        for pattern, candidate in self._patterns:
            found = pattern.match(path)
            if found is not None:
                return candidate, found.groupdict()
        return None


def _pattern_of(rule: str) -> re.Pattern[str]:
    """The rule's path as a pattern: its literal parts escaped, each ``<name>`` one segment."""
    parts = _PARAMETER.split(rule)
    literal = [re.escape(part) for part in parts[::2]]
    names = [f"(?P<{name}>[^/]+)" for name in parts[1::2]]
    return re.compile("".join(p for pair in zip(literal, [*names, ""], strict=True) for p in pair) + r"\Z")


def _quart_view(handler: Handler) -> Callable[..., Awaitable[Response]]:
    async def view(**parameters: str) -> Response:
        return await handler(call_of_request(), **parameters)

    return view


class Front:
    """The ASGI app in front of Quart's: answers a GET to a route of ``routes``, passes the rest on.

    ``answered(path, status)`` is told of every answer it sends (Quart's after-request hook counts
    the others). While the app holds a request hook of its own (a test's ``before_request`` that
    changes what the next request finds), every request goes on to Quart, where the hooks run.
    """

    def __init__(self, app: Quart, routes: Routes, answered: Callable[[str, int], None]) -> None:
        self._app = app
        self._routes = routes
        self._fallback: ASGIApp = app.asgi_app
        self._answered = answered
        self._own_hooks = sum(len(hooks) for hooks in app.after_request_funcs.values())

    def _hooked(self) -> bool:
        app = self._app
        return any(app.before_request_funcs.values()) or (
            sum(len(hooks) for hooks in app.after_request_funcs.values()) != self._own_hooks
        )

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and scope["http_version"] == "1.1"
            and not scope.get("root_path")
            and not self._hooked()
        ):
            found = self._routes.match(scope["path"])
            if found is not None:
                handler, parameters = found
                response = await handler(call_of_scope(scope), **parameters)
                self._answered(scope["path"], response.status_code)
                await _send(send, response)
                return
        await self._fallback(scope, receive, send)


async def _send(send: ASGISendCallable, response: Response) -> None:
    """Send ``response`` as Quart's ASGI adapter does (the same bytes on the wire): the start, the
    body's chunks, the end."""
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": encode_headers(response.headers),
        }
    )
    whole = response.response
    if isinstance(whole, DataBody):
        # Every answer of the fake's routes is one bytes body: sent as one message (Hypercorn writes
        # the same bytes), not through Quart's chunk iterator and a closing empty message.
        data = whole.data[whole.begin : whole.end]
        await send({"type": "http.response.body", "body": data, "more_body": False})
        return
    async with whole as body:
        async for data in body:
            await send(
                {
                    "type": "http.response.body",
                    "body": data.encode() if isinstance(data, str) else data,
                    "more_body": True,
                }
            )
    await send({"type": "http.response.body", "body": b"", "more_body": False})
