"""The fake OpenStack cloud as one Quart app: keystone, the five services, and the control endpoint.

Every service request passes the same gate, in the order a real deployment applies it: the proxy
(a service that is down answers 503, a slow one waits), then keystonemiddleware (a missing or
unknown token is 401; a restricted application credential is 401 on a service whose
keystone_authtoken has no service_type, and on any request none of its access rules names), then
the service itself, which reads the world at ``min(virtual_now, period_to)``, or at the instant a
caller pinned (:meth:`FakeCloudState.answering_at`): every listing of one told sync then answers from
the same instant, however much virtual time the sync's requests take.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import anyio
import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from quart import Quart, Response, request

from tally.core import format_instant, parse_instant

from ..clock import ClockError, PublishProgress, VirtualClock
from ..world import World
from . import _appcreds, _cinder, _glance, _neutron, _nova, _octavia, _tokens
from ._common import api_fault, json_response
from ._context import Ctx
from ._faults import ApiFaults, FaultError
from ._inventory import InventoryCollector
from ._keystone import Accounts, KeystoneError, Token, authenticate, rules_allow, token_body
from ._metrics import REQUESTS

log = logging.getLogger(__name__)

Handler = Callable[[Ctx], Response]

#: URL prefix of each service, and the service type keystonemiddleware in front of it knows.
PREFIXES = (
    ("/compute", "compute"),
    ("/volume", "block-storage"),
    ("/network", "network"),
    ("/image", "image"),
    ("/load-balancer", "load-balancer"),
    ("/v3", "identity"),
)


@dataclass
class FakeCloudState:
    """Everything the app serves from; tests reach into it to move the clock or switch faults."""

    world: World
    clock: VirtualClock
    faults: ApiFaults
    accounts: Accounts
    progress: PublishProgress
    page_counters: dict[str, int] = field(default_factory=dict)
    pinned: datetime | None = None

    def answer_instant(self) -> datetime:
        """Where the services read the world: the pinned instant, else the clock's, within the period."""
        return self.world.answer_instant(self.pinned if self.pinned is not None else self.clock.now())

    @contextlib.contextmanager
    def answering_at(self, instant: datetime) -> Iterator[None]:
        """Answer every listing at ``instant`` until the block ends, while the clock runs on.

        A real cloud changes little in the seconds a sync's listings take; at factor 744 those seconds
        are minutes of the month, so a told sync pins the world at its instant for the whole run.
        """
        self.pinned = instant
        try:
            yield
        finally:
            self.pinned = None


def _service_of(path: str) -> str:
    for prefix, service in PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            return service
    return "control"


def _base_url() -> str:
    host = request.headers.get("Host") or request.host
    return f"{request.scheme}://{host}"


def _unauthorized_body() -> Response:
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
    response.headers["WWW-Authenticate"] = f'Keystone uri="{_base_url()}/v3"'
    return response


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
    registry = CollectorRegistry(auto_describe=True)
    registry.register(InventoryCollector(world, state.answer_instant))

    @app.after_request
    async def _count(response: Response) -> Response:
        REQUESTS.labels(_service_of(request.path), str(response.status_code)).inc()
        return response

    async def gate(service: str, *, authenticated: bool = True) -> Response | Token | None:
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
        token = accounts.validate(request.headers.get("X-Auth-Token"))
        if token is None:
            return _unauthorized_body()
        if token.restricted and token.app_credential is not None:
            if service in faults.no_service_type:
                log.info(
                    "fake cloud refused a restricted credential service=%s reason=no_service_type", service
                )
                return _unauthorized_body()
            rules = token.app_credential.access_rules or ()
            if not rules_allow(rules, service, request.method, request.path):
                log.info(
                    "fake cloud refused a restricted credential service=%s path=%s", service, request.path
                )
                return _unauthorized_body()
        return token

    def ctx(token: Token) -> Ctx:
        return Ctx(
            world=world,
            instant=state.answer_instant(),
            skew=timedelta(seconds=faults.clock_ahead_s),
            token=token,
            base_url=_base_url(),
            path=request.path,
            args=request.args,
            faults=faults,
        )

    def third_page(listing: str) -> bool:
        """Count the pages of a listing (a request without marker is page one); true on page three."""
        count = 1 if "marker" not in request.args else state.page_counters.get(listing, 1) + 1
        state.page_counters[listing] = count
        return listing in faults.fail_third_page and count == 3

    async def serve(service: str, run: Callable[[Token], Response | Awaitable[Response]]) -> Response:
        outcome = await gate(service)
        if isinstance(outcome, Response):
            return outcome
        assert outcome is not None
        result = run(outcome)
        if isinstance(result, Response):
            return result
        return await result

    # -- keystone -------------------------------------------------------------------------------------

    def keystone_version() -> dict[str, Any]:
        return {
            "id": "v3.14",
            "status": "stable",
            "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{_base_url()}/v3/"}],
            "media-types": [
                {"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}
            ],
        }

    @app.get("/")
    async def root() -> Response:
        return json_response({"versions": {"values": [keystone_version()]}}, 300)

    @app.get("/v3")
    @app.get("/v3/")
    async def identity_version() -> Response:
        refused = await gate("identity", authenticated=False)
        if isinstance(refused, Response):
            return refused
        return json_response({"version": keystone_version()})

    @app.post("/v3/auth/tokens")
    async def issue_token() -> Response:
        refused = await gate("identity", authenticated=False)
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
        response = json_response(
            token_body(
                token, _base_url(), with_catalog="nocatalog" not in request.args, absent=faults.absent
            ),
            201,
        )
        response.headers["X-Subject-Token"] = value
        return response

    def keystone_refusal(exc: KeystoneError) -> Response:
        response = json_response(
            {"error": {"code": exc.code, "title": exc.title, "message": exc.message}}, exc.code
        )
        if exc.code == 401:
            response.headers["WWW-Authenticate"] = f'Keystone uri="{_base_url()}/v3"'
        return response

    async def identity(run: Callable[[Token], Response]) -> Response:
        outcome = await gate("identity")
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

    # -- nova -------------------------------------------------------------------------------------------

    def compute_root() -> str:
        return f"{_base_url()}/compute"

    @app.get("/compute/")
    @app.get("/compute")
    async def compute_versions() -> Response:
        refused = await gate("compute", authenticated=False)
        return refused if isinstance(refused, Response) else _nova.versions(compute_root())

    Versioned = Callable[[Token, tuple[int, int]], Response]
    Authorized = Callable[[Token], Response]

    def microversioned(
        negotiate: Callable[[Any], tuple[int, int] | Response],
    ) -> Callable[[Versioned], Authorized]:
        """A handler that first negotiates the service's microversion; a refusal answers instead."""

        def wrap(run: Versioned) -> Authorized:
            def inner(token: Token) -> Response:
                version = negotiate(request.headers)
                if isinstance(version, Response):
                    return version
                return run(token, version)

            return inner

        return wrap

    with_version = microversioned(_nova.negotiate)

    @app.get("/compute/v2.1/")
    @app.get("/compute/v2.1")
    async def compute_version() -> Response:
        # Nova serves its version document without a token, as keystoneauth's discovery expects.
        refused = await gate("compute", authenticated=False)
        return refused if isinstance(refused, Response) else _nova.version(compute_root())

    @app.get("/compute/v2.1/servers/detail")
    async def servers_detail() -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            deleted = "deleted" in request.args and token.is_admin
            if third_page("deleted_instance" if deleted else "instance"):
                return api_fault(
                    500,
                    "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ "
                    "and attach the Nova API log if possible.",
                    _nova.version_headers(version),
                )
            return _nova.servers_detail(ctx(token), version, compute_root())

        return await serve("compute", with_version(run))

    @app.get("/compute/v2.1/flavors/detail")
    async def flavors_detail() -> Response:
        return await serve(
            "compute",
            with_version(lambda token, version: _nova.flavors_detail(ctx(token), version, compute_root())),
        )

    # -- cinder -----------------------------------------------------------------------------------------

    def volume_root() -> str:
        return f"{_base_url()}/volume"

    @app.get("/volume/")
    @app.get("/volume")
    @app.get("/volume/v3/")
    @app.get("/volume/v3")
    async def volume_versions() -> Response:
        refused = await gate("block-storage", authenticated=False)
        return refused if isinstance(refused, Response) else _cinder.versions(volume_root())

    cinder = microversioned(_cinder.negotiate)

    @app.get("/volume/v3/<project_id>/volumes/detail")
    @app.get("/volume/v3/volumes/detail")
    async def volumes_detail(project_id: str | None = None) -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            if third_page("volume"):
                return api_fault(
                    500,
                    "The server has either erred or is incapable of performing the requested operation.",
                    _cinder.version_headers(version),
                )
            return _cinder.volumes_detail(ctx(token), version, volume_root(), project_id or token.project_id)

        return await serve("block-storage", cinder(run))

    @app.get("/volume/v3/<project_id>/types")
    @app.get("/volume/v3/types")
    async def volume_types(project_id: str | None = None) -> Response:
        return await serve(
            "block-storage",
            cinder(
                lambda token, v: _cinder.types(ctx(token), v, volume_root(), project_id or token.project_id)
            ),
        )

    # -- neutron ------------------------------------------------------------------------------------------

    def network_root() -> str:
        return f"{_base_url()}/network"

    @app.get("/network/")
    @app.get("/network")
    @app.get("/network/v2.0/")
    @app.get("/network/v2.0")
    async def network_versions() -> Response:
        refused = await gate("network", authenticated=False)
        return refused if isinstance(refused, Response) else _neutron.versions(network_root())

    @app.get("/network/v2.0/floatingips")
    async def floatingips() -> Response:
        def run(token: Token) -> Response:
            if third_page("floating_ip"):
                return _neutron.error(
                    500,
                    "HTTPInternalServerError",
                    "Request Failed: internal server error while processing your request.",
                )
            return _neutron.floatingips(ctx(token), network_root())

        return await serve("network", run)

    # -- glance -------------------------------------------------------------------------------------------

    @app.get("/image/")
    @app.get("/image")
    async def image_versions() -> Response:
        refused = await gate("image", authenticated=False)
        return refused if isinstance(refused, Response) else _glance.versions(f"{_base_url()}/image")

    @app.get("/image/v2/images")
    async def images() -> Response:
        def run(token: Token) -> Response:
            if third_page("image"):
                return _glance.error(
                    500, "The server has either erred or is incapable of performing the requested operation."
                )
            return _glance.images(ctx(token))

        return await serve("image", run)

    # -- octavia ------------------------------------------------------------------------------------------

    def lb_root() -> str:
        return f"{_base_url()}/load-balancer"

    @app.get("/load-balancer/")
    @app.get("/load-balancer")
    async def lb_versions() -> Response:
        refused = await gate("load-balancer", authenticated=False)
        return refused if isinstance(refused, Response) else _octavia.versions(lb_root())

    @app.get("/load-balancer/v2/lbaas/loadbalancers")
    @app.get("/load-balancer/v2.0/lbaas/loadbalancers")
    async def loadbalancers() -> Response:
        def run(token: Token) -> Response:
            if third_page("loadbalancer"):
                return _octavia.fault(500, "Internal Server Error")
            return _octavia.loadbalancers(ctx(token), lb_root())

        return await serve("load-balancer", run)

    # -- control endpoint ---------------------------------------------------------------------------------

    def browser_refusal() -> Response | None:
        # The control endpoint changes the month's clock: a page a browser loaded must not reach it.
        if "Origin" in request.headers or "Sec-Fetch-Site" in request.headers:
            return json_response({"error": "requests from a browser are refused"}, 403)
        return None

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
        return browser_refusal() or Response("ok\n", content_type="text/plain")

    @app.get("/clock")
    async def get_clock() -> Response:
        return browser_refusal() or json_response(clock_doc())

    @app.put("/clock")
    async def put_clock() -> Response:
        refused = browser_refusal()
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
        return browser_refusal() or json_response(faults.to_json())

    @app.put("/faults")
    async def put_faults() -> Response:
        refused = browser_refusal()
        if refused:
            return refused
        try:
            faults.update(orjson.loads(await request.get_data()))
        except orjson.JSONDecodeError:
            return json_response({"error": "the body is not JSON"}, 400)
        except FaultError as exc:
            return json_response({"error": str(exc)}, 400)
        log.info("fake cloud faults switched faults=%s", orjson.dumps(faults.to_json()).decode())
        return json_response(faults.to_json())

    @app.get("/metrics")
    async def metrics() -> Response:
        refused = browser_refusal()
        if refused:
            return refused
        return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    @app.errorhandler(404)
    async def not_found(_: Exception) -> Response:
        service = _service_of(request.path)
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

    return app
