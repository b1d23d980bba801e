"""The fake keystone's routes on the Quart app: the version documents, token issue, the token checks
(``_tokens``) and application credentials (``_appcreds``); a sync reaches them once a session, so
they stay on Quart's routing rather than the front's table."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from quart import Quart, Response, request

from . import _appcreds, _tokens
from ._call import call_of_request
from ._common import json_response
from ._gate import Authorized, Gate
from ._keystone import KeystoneError, authenticate, token_body

log = logging.getLogger(__name__)


def _base_url() -> str:
    return call_of_request().base_url


def keystone_version(base_url: str) -> dict[str, Any]:
    return {
        "id": "v3.14",
        "status": "stable",
        "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": f"{base_url}/v3/"}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
    }


def keystone_refusal(exc: KeystoneError) -> Response:
    response = json_response(
        {"error": {"code": exc.code, "title": exc.title, "message": exc.message}}, exc.code
    )
    if exc.code == 401:
        response.headers["WWW-Authenticate"] = f'Keystone uri="{_base_url()}/v3"'
    return response


def register(app: Quart, gate: Gate) -> None:
    state = gate.state
    accounts, faults, world = state.accounts, state.faults, state.world

    @app.get("/")
    async def root() -> Response:
        return json_response({"versions": {"values": [keystone_version(_base_url())]}}, 300)

    @app.get("/v3")
    @app.get("/v3/")
    async def identity_version() -> Response:
        call = call_of_request()
        return await gate.document(
            call, "identity", lambda: json_response({"version": keystone_version(call.base_url)})
        )

    @app.post("/v3/auth/tokens")
    async def issue_token() -> Response:
        refused = await gate.check(call_of_request(), "identity", authenticated=False)
        if isinstance(refused, Response):
            return refused
        raw = await request.get_data()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        try:
            token = authenticate(accounts, body)
        except KeystoneError as exc:
            log.info("fake keystone refused a token request code=%d", exc.code)
            return keystone_refusal(exc)
        value = accounts.issue(token)
        document = token_body(
            token, _base_url(), with_catalog="nocatalog" not in request.args, absent=faults.absent
        )
        response = json_response(document, 201)
        response.headers["X-Subject-Token"] = value
        return response

    async def identity(run: Authorized) -> Response:
        outcome = await gate.check(call_of_request(), "identity")
        if isinstance(outcome, Response):
            return outcome
        assert outcome is not None
        try:
            return run(outcome)
        except KeystoneError as exc:
            log.info("fake keystone refused an application credential request code=%d", exc.code)
            return keystone_refusal(exc)

    _appcreds.register(app, identity, accounts, _base_url)
    _tokens.register(
        app,
        identity,
        accounts,
        _base_url,
        lambda: frozenset(faults.absent),
        lambda: [(p.id, p.name) for p in world.projects],
    )
