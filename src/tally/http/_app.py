"""``create_reporting_app``: the Quart app of the Reporting API.

Every route is an ``Operation`` (see ``_contract``); the app binds each to a
view that authenticates, validates the query and body, and calls the handler.
Every answer carries ``X-Request-ID`` (the caller's is kept when it is sane),
every error is a problem document, and an unexpected exception is logged with
the request id and answered 500 without any detail. A database that does not
answer (``StoreUnavailable``: a restart, a failover, no connection within the
pool's wait) is a 503 with ``Retry-After`` and one warning line, no traceback.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from typing import Any

from quart import Quart, Response, g, request
from werkzeug.exceptions import HTTPException

from tally.core import bounded
from tally.store import StoreUnavailable

from . import (
    _routes_events,
    _routes_internal,
    _routes_pricing,
    _routes_projects,
    _routes_rejected,
    _routes_resources,
    _routes_stats,
    _routes_sync_runs,
    _routes_types,
    _routes_usage,
)
from ._answering import (
    REQUEST_ID,
    log_store_unavailable,
    log_unexpected,
    problem_body,
    request_id_of,
    unavailable_problem,
)
from ._auth import KeystoneAsk, authenticate
from ._contract import Call, Operation, parse_body, parse_query
from ._json import FastJSONProvider, NumbersChecked
from ._lean import LeanLane
from ._metrics import HTTP_DURATION, HTTP_REQUESTS, KNOWN_METHODS
from ._openapi import build_openapi
from ._problems import KINDS, PROBLEM_CONTENT_TYPE, Problem
from ._services import ReportingServices

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 * 1024 * 1024  # 1000 events of up to 64 KiB each
MAX_PATH_SEGMENT = 512

OPERATIONS: tuple[Operation, ...] = tuple(
    op
    for module in (
        _routes_events,
        _routes_resources,
        _routes_stats,
        _routes_types,
        _routes_usage,
        _routes_pricing,
        _routes_projects,
        _routes_rejected,
        _routes_sync_runs,
        _routes_internal,
    )
    for op in module.router.operations
)

# The kind of an HTTP error Quart raises itself (routing, body limits), by status.
_STATUS_KINDS = {
    KINDS[kind][0]: kind
    for kind in (
        "validation",
        "unauthorized",
        "forbidden",
        "not_found",
        "method_not_allowed",
        "conflict",
        "payload_too_large",
        "internal",
        "not_implemented",
        "unavailable",
    )
}


def problem_response(problem: Problem) -> Response:
    response = Response(problem_body(problem), status=problem.status, content_type=PROBLEM_CONTENT_TYPE)
    for name, value in problem.headers.items():
        response.headers[name] = value
    return response


def _check_path(op: Operation, path: dict[str, str]) -> dict[str, str]:
    """Path members that cannot name anything are a 404; UUIDs are put in their canonical form."""
    checked = {}
    for name, value in path.items():
        if "\x00" in value or len(value) > MAX_PATH_SEGMENT or not value:
            raise Problem("not_found", f"no {name} {value[:80]!r}")
        if op.path_formats.get(name) == "uuid":
            try:
                value = str(uuid.UUID(value))
            except ValueError:
                raise Problem("not_found", f"no {name} {value[:80]!r}") from None
        checked[name] = value
    return checked


def _bind(op: Operation, services: ReportingServices) -> Any:
    reads_body = op.body is not None or op.raw_body_schema is not None

    async def view(**path: str) -> Any:
        path = _check_path(op, path)
        ask = KeystoneAsk(
            request.headers.get("X-Auth-Token", ""),
            path.get("cloud") or request.args.get("cloud"),
            op.operation_id,
        )
        principal = await authenticate(
            op.auth, services, request.headers.get("Authorization", ""), keystone=ask
        )
        query = parse_query(op.query, request.args)
        raw, body = b"", None
        if reads_body:
            raw = await request.get_data(cache=False, as_text=False, parse_form_data=False)
            if op.max_body is not None and len(raw) > op.max_body:
                raise Problem("payload_too_large", f"the body may hold at most {op.max_body} bytes")
            if op.body is not None:
                body = parse_body(op.body, raw)
        result = await op.handler(
            Call(services=services, path=path, query=query, body=body, principal=principal, raw_body=raw)
        )
        # Quart writes the answer through the provider's response, which checks the numbers itself.
        return result.value if isinstance(result, NumbersChecked) else result

    view.__name__ = op.operation_id
    return view


class ReportingApp(Quart):
    """Quart, with the lean lane (``_lean``) answering its lean operations before Quart sees them."""

    lane: LeanLane | None = None

    async def asgi_app(self, scope: Any, receive: Any, send: Any) -> None:
        if self.lane is not None and not self.debug and await self.lane.serve(scope, send):
            return
        await super().asgi_app(scope, receive, send)


def create_reporting_app(services: ReportingServices, *, extra_operations: Iterable[Operation] = ()) -> Quart:
    """The Reporting API app over ``services``; serve it with ``serve_quart``."""
    app = ReportingApp("tally.http")
    json_provider = FastJSONProvider(app)
    app.json = json_provider
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    operations = (*OPERATIONS, *extra_operations)
    document = build_openapi(operations, title="Tally Reporting API", version="1")
    if services.settings.reporting_auth_mode == "disabled":
        log.warning("reporting API auth disabled auth_mode=disabled: every caller is admin; local runs only")

    for op in operations:
        app.add_url_rule(
            op.quart_rule, endpoint=op.operation_id, view_func=_bind(op, services), methods=[op.method]
        )
    app.lane = LeanLane(operations, services, json_provider.answer)

    async def openapi_json() -> Any:
        return document

    app.add_url_rule("/openapi.json", endpoint="openapi", view_func=openapi_json, methods=["GET"])

    @app.before_request
    async def _request_id() -> None:
        g.request_id = request_id_of(request.headers.get(REQUEST_ID, ""))
        g.started = time.perf_counter()

    @app.after_request
    async def _stamp(response: Response) -> Response:
        request_id = getattr(g, "request_id", None) or uuid.uuid4().hex
        response.headers[REQUEST_ID] = request_id
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        HTTP_REQUESTS.labels(rule, bounded(request.method, KNOWN_METHODS), str(response.status_code)).inc()
        started = getattr(g, "started", None)
        if started is not None:
            HTTP_DURATION.labels(rule).observe(time.perf_counter() - started)
        return response

    @app.errorhandler(Problem)
    async def _problem(problem: Problem) -> Response:
        return problem_response(problem)

    @app.errorhandler(HTTPException)
    async def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        kind = _STATUS_KINDS.get(status, "validation" if 400 <= status < 500 else "internal")
        headers: dict[str, str] = {}
        detail: str | None = None
        if status == 405:
            allowed = sorted(getattr(exc, "valid_methods", None) or [])
            headers["Allow"] = ", ".join(allowed)
            detail = f"{request.method} is not allowed on {request.path}; allowed: {', '.join(allowed)}"
        elif status == 404:
            detail = f"no route {request.path}"
        elif status == 413:
            detail = f"the request body may hold at most {MAX_REQUEST_BYTES} bytes"
        elif status < 500:
            detail = exc.description
        return problem_response(Problem(kind, detail, status=status, headers=headers))

    @app.errorhandler(StoreUnavailable)
    async def _store_away(exc: StoreUnavailable) -> Response:
        log_store_unavailable(getattr(g, "request_id", "-"), request.method, request.path, exc)
        return problem_response(unavailable_problem())

    @app.errorhandler(Exception)
    async def _unexpected(exc: Exception) -> Response:
        log_unexpected(getattr(g, "request_id", "-"), request.method, request.path, exc)
        return problem_response(Problem("internal"))

    return app
