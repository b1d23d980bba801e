"""The fake OpenStack cloud as one Quart app: keystone, the five services, and the control endpoint.

Every service request passes the same gate (``_gate``: the proxy, then keystonemiddleware), then
the service itself, which reads the world at ``min(virtual_now, period_to)``, or at the instant a
caller pinned (:meth:`FakeCloudState.answering_at`): every listing of one told sync then answers from
the same instant, however much virtual time the sync's requests take. The services' routes
(``_routes_services``) are answered by a plain ASGI front before Quart (``_call``); keystone's and
the control endpoint's, and whatever the front does not hold, by Quart.
"""

from __future__ import annotations

from quart import Quart, Response, request

from ..clock import PublishProgress, VirtualClock
from ..world import World
from . import _routes_control, _routes_keystone, _routes_services
from ._call import Front, Routes
from ._faults import ApiFaults
from ._gate import Gate
from ._keystone import Accounts
from ._metrics import REQUESTS
from ._state import FakeCloudState

__all__ = ["FakeCloudState", "create_fake_cloud_app"]

#: URL prefix of each service, and the service type keystonemiddleware in front of it knows.
PREFIXES = (
    ("/compute", "compute"),
    ("/volume", "block-storage"),
    ("/network", "network"),
    ("/image", "image"),
    ("/load-balancer", "load-balancer"),
    ("/v3", "identity"),
)


def _service_of(path: str) -> str:
    for prefix, service in PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            return service
    return "control"


def _count(path: str, status: int) -> None:
    REQUESTS.labels(_service_of(path), str(status)).inc()


def create_fake_cloud_app(
    world: World,
    clock: VirtualClock | None = None,
    faults: ApiFaults | None = None,
    *,
    accounts: Accounts | None = None,
    progress: PublishProgress | None = None,
) -> Quart:
    """The fake cloud serving ``world``. Without a clock it answers at the end of the period.

    The app's state is ``app.config["FAKE_CLOUD"]`` (a :class:`FakeCloudState`).
    """
    clock = clock or VirtualClock(world.period_to, 0.0)
    faults = faults or ApiFaults()
    if accounts is None:
        first = min(world.projects, key=lambda p: p.name) if world.projects else None
        accounts = Accounts.default(
            world.cloud, first.id if first else "0" * 32, first.name if first else "member"
        )
    state = FakeCloudState(world, clock, faults, accounts, progress or PublishProgress())
    app = Quart(__name__)
    app.config["FAKE_CLOUD"] = state

    @app.after_request
    async def count(response: Response) -> Response:
        _count(request.path, response.status_code)
        return response

    gate = Gate(state)
    routes = Routes(app)
    _routes_keystone.register(app, gate)
    _routes_services.register(routes, gate)
    _routes_control.register(app, state, _service_of)
    app.asgi_app = Front(app, routes, _count)  # type: ignore[method-assign]
    return app
