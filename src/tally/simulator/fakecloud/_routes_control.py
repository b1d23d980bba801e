"""The fake cloud's control endpoint (its health, the month's clock, the API faults, its inventory
metrics) and the answers to a path or method no route holds, on the Quart app."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from quart import Quart, Response, request

from tally.core import format_instant, parse_instant

from ..clock import ClockError
from ._common import api_fault, json_response
from ._faults import FaultDocumentError
from ._inventory import InventoryCollector
from ._state import FakeCloudState

log = logging.getLogger(__name__)


def _browser_refusal() -> Response | None:
    # The control endpoint changes the month's clock: a page a browser loaded must not reach it.
    if "Origin" in request.headers or "Sec-Fetch-Site" in request.headers:
        return json_response({"error": "requests from a browser are refused"}, 403)
    return None


def register(app: Quart, state: FakeCloudState, service_of: Any) -> None:
    clock, faults, world = state.clock, state.faults, state.world
    registry = CollectorRegistry(auto_describe=True)
    registry.register(InventoryCollector(world, state.answer_instant))

    def clock_doc() -> dict[str, Any]:
        return {
            "virtual_now": format_instant(clock.now()),
            "factor": clock.factor,
            "published": state.progress.published,
            "total": state.progress.total,
            "held": state.progress.held,
            "holding": state.progress.holding,
            "period_from": format_instant(world.period_from),
            "period_to": format_instant(world.period_to),
        }

    @app.get("/healthz")
    async def healthz() -> Response:
        return _browser_refusal() or Response("ok\n", content_type="text/plain")

    @app.get("/clock")
    async def get_clock() -> Response:
        return _browser_refusal() or json_response(clock_doc())

    @app.put("/clock")
    async def put_clock() -> Response:
        refused = _browser_refusal()
        if refused:
            return refused
        try:
            doc = orjson.loads(await request.get_data())
        except orjson.JSONDecodeError:
            return json_response({"error": "the body is not JSON"}, 400)
        if not isinstance(doc, dict) or "factor" not in doc or set(doc) - {"factor", "at"}:
            return json_response(
                {"error": 'the body must be {"factor": <number>} with an optional "at"'}, 400
            )
        try:
            at = parse_instant(doc["at"]) if "at" in doc else None
            clock.rebase(doc["factor"])
        except (ClockError, ValueError) as exc:
            return json_response({"error": str(exc)}, 400)
        if at is not None:
            clock.set(at)
        log.info(
            "fake cloud clock rebased factor=%s virtual_now=%s", clock.factor, format_instant(clock.now())
        )
        return json_response(clock_doc())

    @app.get("/faults")
    async def get_faults() -> Response:
        return _browser_refusal() or json_response(faults.to_json())

    @app.put("/faults")
    async def put_faults() -> Response:
        refused = _browser_refusal()
        if refused:
            return refused
        try:
            faults.update(orjson.loads(await request.get_data()))
        except orjson.JSONDecodeError:
            return json_response({"error": "the body is not JSON"}, 400)
        except FaultDocumentError as exc:
            return json_response({"error": str(exc)}, 400)
        log.info("fake cloud faults switched faults=%s", orjson.dumps(faults.to_json()).decode())
        return json_response(faults.to_json())

    @app.get("/metrics")
    async def metrics() -> Response:
        return _browser_refusal() or Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    _register_errors(app, service_of)


def _register_errors(app: Quart, service_of: Any) -> None:
    @app.errorhandler(404)
    async def not_found(_: Exception) -> Response:
        service = service_of(request.path)
        if service == "compute":
            return api_fault(404, "The resource could not be found.")
        if service == "identity":
            return json_response(
                {"error": {"code": 404, "title": "Not Found", "message": "The resource could not be found."}},
                404,
            )
        return json_response({"error": {"code": 404, "message": "The resource could not be found."}}, 404)

    @app.errorhandler(405)
    async def bad_method(_: Exception) -> Response:
        return json_response(
            {"error": {"code": 405, "message": "The method is not allowed for the requested URL."}}, 405
        )
