"""The lean lane: the Reporting API's two hot listings answered as plain ASGI, in front of Quart.

A billing client pages through ``GET /api/v1/events`` and ``GET /api/v1/resources``; every other
route is seldom called. Quart's own handling of a request (its request context, the URL adapter,
werkzeug's request and response objects, the before and after hooks and their signals) was a fifth
of a page's server CPU (docs/benchmarks.md, "reads", the lean lane). The lane answers the operations
declared ``lean`` (GET, no path parameters, no body) with the app's own parts, in the app's order:
the request id, ``authenticate`` on the ``Authorization`` header, ``parse_query`` on the query
string as werkzeug parses it, the handler, the app's JSON provider, the same problem documents and
log lines, ``X-Request-ID`` and the HTTP metrics. One difference, invisible in the answers: a
read_all or admin token's role is recalled (``KnownTokens``) and the page's own statement checks
that the token is still usable, where Quart's path spends a round trip of its own on the token
(``_auth``). Anything else (another path, HEAD, OPTIONS, a mounted ``root_path``) goes to Quart.
``tests/http/test_lean_lane.py`` holds both paths' answers equal: status, headers and bytes."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

from werkzeug.datastructures import ImmutableMultiDict

from tally.store import StoreUnavailable, TokenNotUsable

from ._answering import (
    log_store_unavailable,
    log_unexpected,
    problem_body,
    request_id_of,
    unavailable_problem,
)
from ._auth import KeystoneAsk, api_token_refused, authenticate
from ._contract import Call, Operation, parse_query
from ._metrics import HTTP_DURATION, HTTP_REQUESTS
from ._problems import PROBLEM_CONTENT_TYPE, Problem
from ._services import ReportingServices

Send = Callable[[dict[str, Any]], Awaitable[None]]


def _query_args(query_string: bytes) -> ImmutableMultiDict[str, str]:
    # werkzeug's own reading of request.args, so that both paths see the same members.
    return ImmutableMultiDict(
        parse_qsl(query_string.decode(), keep_blank_values=True, errors="werkzeug.url_quote")
    )


def _problem_answer(problem: Problem) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    headers = [(b"content-type", PROBLEM_CONTENT_TYPE.encode())]
    headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in problem.headers.items()]
    return problem.status, problem_body(problem), headers


class LeanLane:
    """Answers the ``lean`` operations of an app; ``serve`` is False for any request it leaves to Quart."""

    def __init__(
        self, operations: Iterable[Operation], services: ReportingServices, encode: Callable[[Any], bytes]
    ) -> None:
        self._operations: dict[str, Operation] = {}
        for op in operations:
            if not op.lean:
                continue
            if op.method != "GET" or "{" in op.path or op.body is not None or op.raw_body_schema is not None:
                raise ValueError(f"{op.operation_id}: a lean operation is a GET without path members or body")
            self._operations[op.path] = op
        self._services = services
        self._encode = encode

    async def serve(self, scope: dict[str, Any], send: Send) -> bool:
        if scope["type"] != "http" or scope["method"] != "GET" or scope.get("root_path"):
            return False
        op = self._operations.get(scope["path"])
        if op is None:
            return False
        await self._answer(op, scope, send)
        return True

    async def _answer(self, op: Operation, scope: dict[str, Any], send: Send) -> None:
        started = time.perf_counter()
        authorization: str | None = None
        given: str | None = None
        x_auth_token = ""
        for name, value in scope["headers"]:
            lowered = name.lower()
            if lowered == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif lowered == b"x-auth-token" and not x_auth_token:
                x_auth_token = value.decode("latin-1")
            elif lowered == b"x-request-id" and given is None:
                given = value.decode("latin-1")
        request_id = request_id_of(given or "")
        known = self._services.known_tokens
        principal = None
        try:
            args = _query_args(scope["query_string"])
            ask = KeystoneAsk(x_auth_token, args.get("cloud"), op.operation_id)
            principal = await authenticate(
                op.auth, self._services, authorization or "", known=known, keystone=ask
            )
            query = parse_query(op.query, args)
            result = await op.handler(
                Call(services=self._services, path={}, query=query, body=None, principal=principal)
            )
            status = 200
            if isinstance(result, tuple):
                result, status = result
            body, headers = self._encode(result), [(b"content-type", b"application/json")]
        except Problem as problem:
            status, body, headers = _problem_answer(problem)
        except TokenNotUsable:
            # Revoked or expired since it was remembered: the answer an unknown token gets.
            if principal is not None and principal.recalled is not None:
                known.forget(principal.recalled)
            status, body, headers = _problem_answer(api_token_refused())
        except StoreUnavailable as exc:
            log_store_unavailable(request_id, "GET", scope["path"], exc)
            status, body, headers = _problem_answer(unavailable_problem())
        except Exception as exc:
            log_unexpected(request_id, "GET", scope["path"], exc)
            status, body, headers = _problem_answer(Problem("internal"))
        headers.insert(1, (b"content-length", str(len(body)).encode("ascii")))
        headers.append((b"x-request-id", request_id.encode("ascii")))
        rule = op.quart_rule
        HTTP_REQUESTS.labels(rule, "GET", str(status)).inc()
        HTTP_DURATION.labels(rule).observe(time.perf_counter() - started)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
