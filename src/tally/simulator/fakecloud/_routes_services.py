"""The five services' routes of the fake cloud (nova, cinder, neutron, glance, octavia): their version
documents and the listings a sync reads, each behind the gate, on the front's route table. Each
service registers its own (``_nova_routes``, ``_cinder_routes``, ...).

A listing named in the faults' ``fail_third_page`` answers its service's 500 on its third page.
"""

from __future__ import annotations

from quart import Response

from . import _cinder, _glance, _neutron, _nova, _octavia
from ._call import FakeCall, Routes
from ._common import api_fault
from ._gate import Gate, microversioned
from ._keystone import Token


def register(routes: Routes, gate: Gate) -> None:
    for service_routes in (_nova_routes, _cinder_routes, _neutron_routes, _glance_routes, _octavia_routes):
        service_routes(routes, gate)


def _nova_routes(routes: Routes, gate: Gate) -> None:
    def root(call: FakeCall) -> str:
        return f"{call.base_url}/compute"

    @routes.get("/compute/", "/compute")
    async def compute_versions(call: FakeCall) -> Response:
        return await gate.document(call, "compute", lambda: _nova.versions(root(call)))

    @routes.get("/compute/v2.1/", "/compute/v2.1")
    async def compute_version(call: FakeCall) -> Response:
        # Nova serves its version document without a token, as keystoneauth's discovery expects.
        return await gate.document(call, "compute", lambda: _nova.version(root(call)))

    @routes.get("/compute/v2.1/servers/detail")
    async def servers_detail(call: FakeCall) -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            deleted = "deleted" in call.args and token.is_admin
            if gate.third_page(call, "deleted_instance" if deleted else "instance"):
                return api_fault(
                    500,
                    "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ "
                    "and attach the Nova API log if possible.",
                    _nova.version_headers(version),
                )
            return _nova.servers_detail(gate.ctx(call, token), version, root(call))

        return await gate.serve(call, "compute", microversioned(call, _nova.negotiate, run))

    @routes.get("/compute/v2.1/flavors/detail")
    async def flavors_detail(call: FakeCall) -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            return _nova.flavors_detail(gate.ctx(call, token), version, root(call))

        return await gate.serve(call, "compute", microversioned(call, _nova.negotiate, run))


def _cinder_routes(routes: Routes, gate: Gate) -> None:
    def root(call: FakeCall) -> str:
        return f"{call.base_url}/volume"

    @routes.get("/volume/", "/volume", "/volume/v3/", "/volume/v3")
    async def volume_versions(call: FakeCall) -> Response:
        return await gate.document(call, "block-storage", lambda: _cinder.versions(root(call)))

    @routes.get("/volume/v3/<project_id>/volumes/detail", "/volume/v3/volumes/detail")
    async def volumes_detail(call: FakeCall, project_id: str | None = None) -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            if gate.third_page(call, "volume"):
                return api_fault(
                    500,
                    "The server has either erred or is incapable of performing the requested operation.",
                    _cinder.version_headers(version),
                )
            ctx = gate.ctx(call, token)
            return _cinder.volumes_detail(ctx, version, root(call), project_id or token.project_id)

        return await gate.serve(call, "block-storage", microversioned(call, _cinder.negotiate, run))

    @routes.get("/volume/v3/<project_id>/types", "/volume/v3/types")
    async def volume_types(call: FakeCall, project_id: str | None = None) -> Response:
        def run(token: Token, version: tuple[int, int]) -> Response:
            return _cinder.types(gate.ctx(call, token), version, root(call), project_id or token.project_id)

        return await gate.serve(call, "block-storage", microversioned(call, _cinder.negotiate, run))


def _neutron_routes(routes: Routes, gate: Gate) -> None:
    """Neutron's floating IPs."""

    @routes.get("/network/", "/network", "/network/v2.0/", "/network/v2.0")
    async def network_versions(call: FakeCall) -> Response:
        return await gate.document(call, "network", lambda: _neutron.versions(f"{call.base_url}/network"))

    @routes.get("/network/v2.0/floatingips")
    async def floatingips(call: FakeCall) -> Response:
        def run(token: Token) -> Response:
            if gate.third_page(call, "floating_ip"):
                return _neutron.error(
                    500,
                    "HTTPInternalServerError",
                    "Request Failed: internal server error while processing your request.",
                )
            return _neutron.floatingips(gate.ctx(call, token), f"{call.base_url}/network")

        return await gate.serve(call, "network", run)


def _glance_routes(routes: Routes, gate: Gate) -> None:
    """Glance's images."""

    @routes.get("/image/", "/image")
    async def image_versions(call: FakeCall) -> Response:
        return await gate.document(call, "image", lambda: _glance.versions(f"{call.base_url}/image"))

    @routes.get("/image/v2/images")
    async def images(call: FakeCall) -> Response:
        def run(token: Token) -> Response:
            if gate.third_page(call, "image"):
                return _glance.error(
                    500, "The server has either erred or is incapable of performing the requested operation."
                )
            return _glance.images(gate.ctx(call, token))

        return await gate.serve(call, "image", run)


def _octavia_routes(routes: Routes, gate: Gate) -> None:
    """Octavia's load balancers."""

    @routes.get("/load-balancer/", "/load-balancer")
    async def lb_versions(call: FakeCall) -> Response:
        return await gate.document(
            call, "load-balancer", lambda: _octavia.versions(f"{call.base_url}/load-balancer")
        )

    @routes.get("/load-balancer/v2/lbaas/loadbalancers", "/load-balancer/v2.0/lbaas/loadbalancers")
    async def loadbalancers(call: FakeCall) -> Response:
        def run(token: Token) -> Response:
            if gate.third_page(call, "loadbalancer"):
                return _octavia.fault(500, "Internal Server Error")
            return _octavia.loadbalancers(gate.ctx(call, token), f"{call.base_url}/load-balancer")

        return await gate.serve(call, "load-balancer", run)
