"""The gate every fake service request passes, in a real deployment's order, and what a handler reads.

The proxy first (a service that is absent answers 404, one that is down 503, a slow one waits), then
keystonemiddleware (a missing or unknown token is 401; a restricted application credential is 401 on
a service whose keystone_authtoken has no service_type, and on any request none of its access rules
names), then the service itself through :meth:`Gate.serve`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import anyio
from quart import Response

from ._call import FakeCall
from ._common import json_response
from ._context import Ctx
from ._keystone import Token, rules_allow
from ._state import FakeCloudState

log = logging.getLogger(__name__)

Versioned = Callable[[Token, tuple[int, int]], Response]
Authorized = Callable[[Token], Response]


def unauthorized(call: FakeCall) -> Response:
    response = json_response(
        {
            "error": {
                "code": 401,
                "title": "Unauthorized",
                "message": "The request you have made requires authentication.",
            }
        },
        401,
    )
    response.headers["WWW-Authenticate"] = f'Keystone uri="{call.base_url}/v3"'
    return response


class Gate:
    """The proxy and keystonemiddleware in front of every service of one fake cloud."""

    def __init__(self, state: FakeCloudState) -> None:
        self.state = state

    async def check(
        self, call: FakeCall, service: str, *, authenticated: bool = True
    ) -> Response | Token | None:
        """The refusal of the proxy or of keystonemiddleware, else the caller's token (None when
        ``authenticated`` is false: a document served without one)."""
        faults = self.state.faults
        if service in faults.absent:
            # What a cloud's front answers for a path no service is deployed under.
            return Response(
                "<html><body><h1>404 Not Found</h1></body></html>\n", 404, content_type="text/html"
            )
        if service in faults.down:
            return Response(
                "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this "
                "request.\n</body></html>\n",
                status=503,
                content_type="text/html",
            )
        delay = faults.slow.get(service, 0.0)
        if delay:
            await anyio.sleep(delay)
        if not authenticated:
            return None
        token = self.state.accounts.validate(call.headers.get("X-Auth-Token"))
        if token is None:
            return unauthorized(call)
        if token.restricted and token.app_credential is not None:
            if service in faults.no_service_type:
                log.info(
                    "fake cloud refused a restricted credential service=%s reason=no_service_type", service
                )
                return unauthorized(call)
            if not rules_allow(token.app_credential.access_rules or (), service, call.method, call.path):
                log.info("fake cloud refused a restricted credential service=%s path=%s", service, call.path)
                return unauthorized(call)
        return token

    async def document(self, call: FakeCall, service: str, answer: Callable[[], Response]) -> Response:
        """A document served without a token (a version document), unless the proxy refuses."""
        refused = await self.check(call, service, authenticated=False)
        return refused if isinstance(refused, Response) else answer()

    async def serve(
        self, call: FakeCall, service: str, run: Callable[[Token], Response | Awaitable[Response]]
    ) -> Response:
        """``run`` with the caller's token once the gate let the request through."""
        outcome = await self.check(call, service)
        if isinstance(outcome, Response):
            return outcome
        assert outcome is not None
        result = run(outcome)
        if isinstance(result, Response):
            return result
        return await result

    def ctx(self, call: FakeCall, token: Token) -> Ctx:
        """What a handler reads: the world at the answer instant, the caller and the query."""
        state = self.state
        return Ctx(
            world=state.world,
            instant=state.answer_instant(),
            skew=timedelta(seconds=state.faults.clock_ahead_s),
            token=token,
            base_url=call.base_url,
            path=call.path,
            args=call.args,
            faults=state.faults,
        )

    def third_page(self, call: FakeCall, listing: str) -> bool:
        """Count the pages of a listing (a request without marker is page one); true on page three when
        the listing's third page is to fail."""
        counters = self.state.page_counters
        count = 1 if "marker" not in call.args else counters.get(listing, 1) + 1
        counters[listing] = count
        return listing in self.state.faults.fail_third_page and count == 3


def microversioned(
    call: FakeCall, negotiate: Callable[[Any], tuple[int, int] | Response], run: Versioned
) -> Authorized:
    """``run`` once the service's microversion is negotiated from the call's headers; a refusal
    answers instead."""

    def inner(token: Token) -> Response:
        version = negotiate(call.headers)
        if isinstance(version, Response):
            return version
        return run(token, version)

    return inner
