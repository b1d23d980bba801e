"""The OpenStack adapter: one run's requests, in the seed's order.

1. The clouds.yaml entry's grant (``_grants``): the token and catalog of an earlier run while
   current, else a token through keystoneauth1 (``_keystone``); the entry is resolved again
   only when its files changed.
2. Probe: one server across every project. A refusal ends the run before any
   listing, naming the entry: only nova refuses a lesser account loudly, and the
   other services would answer it with a narrowed listing that reads as complete.
3. Read nova's version document and negotiate the microversion (2.47 when the
   cloud has it: the flavor comes embedded in each server), once per catalog of the grant.
4. Concurrently, each read to its end: live servers, soft-deleted servers (restorable,
   so observed alive, in state soft_deleted), deleted servers (only with
   a window; each with its launch and flavor, which book a whole life the bus
   missed), flavors (only below 2.47), and each service the settings include:
   volumes, floating IPs, images (visible to all, then the hidden ones), load
   balancers (octavia is left out unless included; the others are in unless left out).
5. Size names: the same grant, then cinder's volume types, private ones too
   (none without cinder: nothing asks for them).

Every request but keystone's (the token POSTs, and the version document the
generic plugins read) is a GET one of the eight access rules of a read-only
application credential allows. A failure that belongs to one type
costs that type its completeness and nothing else.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx

from tally.config import CloudEntry
from tally.core import format_instant
from tally.reconcile import (
    AccountCheck,
    DeletedResource,
    Observation,
    ObservedResource,
    ObserveRequest,
    Progress,
    RunAborted,
    SizeNameEntry,
    SizeNamesFailed,
)

from ._clouds_yaml import ResolvedCloud, warn_if_unpinned
from ._connections import run_client
from ._evidence import (
    ListingInvalid,
    is_soft_deleted,
    observe_deleted_server,
    observe_floating_ip,
    observe_image,
    observe_loadbalancer,
    observe_server,
    observe_volume,
    volume_type_name,
)
from ._grants import GRANTS
from ._keystone import EndpointMissing, Grant
from ._listing import UNTIL_EMPTY, ListingFailed, get_json, list_all, under
from ._settings import AdapterConfigError, OpenStackSettings, parse_adapter_config

log = logging.getLogger(__name__)

_T = TypeVar("_T")

EMBEDDED_FLAVOR = (2, 47)
LISTING_OF = {"instance": "server", "volume": "volume", "floating_ip": "floating_ip", "image": "image"}
LIVE = {"all_tenants": "1"}
# Nova's live listing leaves soft-deleted servers out; they are restorable, so they are observed (in
# state soft_deleted) on every run, or the absence pass would book them deleted.
SOFT_DELETED = {"all_tenants": "1", "deleted": "true", "status": "SOFT_DELETED"}


def negotiate_microversion(document: Mapping[str, Any]) -> tuple[int, int] | None:
    """The compute microversion to ask for: 2.47 when the cloud speaks it, else its newest; None = 2.1."""
    version = document.get("version")
    if not isinstance(version, Mapping):
        versions = [v for v in document.get("versions") or [] if isinstance(v, Mapping)]
        current = [v for v in versions if v.get("status") == "CURRENT"]
        version = current[0] if current else None
    if version is None or not version.get("version"):
        return None
    major, _, minor = str(version["version"]).partition(".")
    newest = (int(major), int(minor or 0))
    return min(newest, EMBEDDED_FLAVOR)


@dataclass(slots=True)
class _Collected:
    resources: list[ObservedResource] = field(default_factory=list)
    deleted: list[DeletedResource] = field(default_factory=list)
    incomplete: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def fail(self, resource_type: str, listing: str, reason: object) -> None:
        self.incomplete.add(resource_type)
        self.errors.append(f"enumerating {listing}: {reason}")


class OpenStackAdapter:
    """The adapter of one clouds config entry; cheap to build, one per run."""

    def __init__(self, entry: CloudEntry) -> None:
        self._entry = entry

    @staticmethod
    def check_environment() -> None:
        """At startup: warn when OS_CLIENT_CONFIG_FILE is unset (see ``warn_if_unpinned``)."""
        warn_if_unpinned()

    @staticmethod
    async def check_account(entry: CloudEntry) -> AccountCheck:
        """``tally check-cloud``: seed 001's account check of the entry's clouds.yaml entry."""
        from ._check import check_cloud

        return await check_cloud(parse_adapter_config(entry.adapter_config))

    @staticmethod
    def validate_config(entry: CloudEntry) -> str | None:
        try:
            parse_adapter_config(entry.adapter_config)
        except AdapterConfigError as exc:
            return str(exc)
        return None

    def _settings(self) -> OpenStackSettings:
        try:
            return parse_adapter_config(self._entry.adapter_config)
        except AdapterConfigError as exc:
            raise RunAborted(str(exc)) from exc

    async def observe(self, request: ObserveRequest) -> Observation:
        settings = self._settings()
        progress = request.progress
        progress.begin("server")
        grant = await GRANTS.grant(settings.os_cloud)
        async with run_client(grant) as client:
            compute = await self._probe(client, grant, grant.cloud)
            microversion = await self._negotiate(client, grant, compute)
            progress.end("server")
            return await _Enumeration(client, grant, compute, microversion, request).run(settings)

    async def _probe(self, client: httpx.AsyncClient, grant: Grant, cloud: ResolvedCloud) -> str:
        refused = f'the clouds.yaml entry "{cloud.entry}" cannot observe the whole cloud'
        try:
            compute = grant.endpoint("compute")
            await get_json(client, compute + "/servers/detail", {"all_tenants": "1", "limit": "1"})
        except (EndpointMissing, ListingFailed) as exc:
            raise RunAborted(f"{refused}: {exc}") from exc
        return compute

    async def _negotiate(
        self, client: httpx.AsyncClient, grant: Grant, compute: str
    ) -> tuple[int, int] | None:
        """The microversion of ``compute``: negotiated once per catalog of the grant; a document that
        could not be read (2.1 for this run) is asked for again at the next."""
        if compute in grant.microversions:
            return grant.microversions[compute]
        try:
            microversion = negotiate_microversion(await get_json(client, compute + "/"))
        except (ListingFailed, ValueError) as exc:
            log.warning("compute version document unreadable, using 2.1 reason=%s", exc)
            return None
        grant.microversions[compute] = microversion
        return microversion

    async def list_size_names(self, progress: Progress) -> list[SizeNameEntry]:
        settings = self._settings()
        if not settings.include_cinder:
            return []
        progress.begin("volume_type")
        try:
            try:
                grant = await GRANTS.grant(settings.os_cloud)
            except RunAborted as exc:
                raise SizeNamesFailed(f"listing the volume types: {exc}") from exc
            async with run_client(grant) as client:
                try:
                    url = grant.endpoint("block-storage") + "/types"
                    # Cinder's type listing has no next link and caps a page at osapi_max_limit:
                    # it is paged by marker until a page comes back empty.
                    return await list_all(
                        client,
                        url,
                        key="volume_types",
                        links_key=UNTIL_EMPTY,
                        convert=volume_type_name,
                        params={"is_public": "None"},
                    )
                except (ListingFailed, EndpointMissing, ListingInvalid, RunAborted) as exc:
                    raise SizeNamesFailed(f"listing the volume types: {exc}") from exc
        finally:
            progress.end("volume_type")


def _nova_headers(microversion: tuple[int, int] | None) -> dict[str, str]:
    """Only nova is told the microversion: the header names compute, and the other APIs have their own."""
    if microversion is None:
        return {}
    value = f"{microversion[0]}.{microversion[1]}"
    return {"OpenStack-API-Version": f"compute {value}", "X-OpenStack-Nova-API-Version": value}


class _Enumeration:
    """Step 4 of one run: each listing to its end, concurrently, into what they share."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        grant: Grant,
        compute: str,
        microversion: tuple[int, int] | None,
        request: ObserveRequest,
    ) -> None:
        self.client = client
        self.grant = grant
        self.compute = compute
        self.request = request
        self.progress = request.progress
        self.flavors_embedded = microversion is not None and microversion >= EMBEDDED_FLAVOR
        self.nova = _nova_headers(microversion)
        self.out = _Collected()
        self.flavors: dict[str, Mapping[str, Any]] | None = None
        self.servers: list[Mapping[str, Any]] = []
        self.deleted: list[Mapping[str, Any]] = []

    async def run(self, settings: OpenStackSettings) -> Observation:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.guarded, "instance", "server", functools.partial(self.live_servers, LIVE))
            tg.start_soon(
                self.guarded,
                "instance",
                "server",
                functools.partial(self.live_servers, SOFT_DELETED, is_soft_deleted),
            )
            if self.request.deleted_since is not None:
                tg.start_soon(self.guarded, "instance", "server", self.deleted_servers)
            if not self.flavors_embedded:
                tg.start_soon(self.guarded, "instance", "flavor", self.flavor_catalog)
            for resource_type, listing in (
                ("volume", self.volumes),
                ("floating_ip", self.floating_ips),
                ("image", self.images),
                ("loadbalancer", self.loadbalancers),
            ):
                if resource_type in settings.resource_types:
                    tg.start_soon(self.guarded, resource_type, resource_type, listing)
        return self.observation(settings)

    def observation(self, settings: OpenStackSettings) -> Observation:
        """The servers kept raw, observed now the flavors are known, with everything else listed."""
        out = self.out
        # Below 2.47 with the flavor listing refused, flavors stays None: servers are observed without sizes.
        for doc in self.servers:
            out.resources.append(observe_server(doc, self.flavors))
        try:
            out.deleted.extend([observe_deleted_server(doc, self.flavors) for doc in self.deleted])
        except ListingInvalid as exc:
            out.fail("instance", "server", exc)
        return Observation(
            resources=tuple(out.resources),
            deleted=tuple(out.deleted),
            enumerated_types=settings.resource_types,
            incomplete_types=frozenset(out.incomplete),
            errors=tuple(out.errors),
        )

    async def guarded(self, resource_type: str, listing: str, work: Callable[[], Awaitable[None]]) -> None:
        self.progress.begin(listing)
        try:
            await work()
        except (ListingFailed, EndpointMissing, ListingInvalid, RunAborted) as exc:
            # RunAborted: keystone refused the new token a 401 asked for. The types already listed
            # stand; this one is incomplete, as for any failure of its listing.
            self.out.fail(resource_type, listing, exc)
        # Not on cancellation: a listing the budget cut off stays in the record the error is written from.
        self.progress.end(listing)

    async def live_servers(
        self, params: Mapping[str, str], wanted: Callable[[Mapping[str, Any]], bool] = lambda _: True
    ) -> None:
        # ``wanted`` guards a filter the service might not apply: a deleted server is never live.
        if self.flavors_embedded:
            self.out.resources.extend(
                await self.server_details(params, lambda d: observe_server(d, None) if wanted(d) else None)
            )
            return
        # Kept raw until the flavors are known: below 2.47 a server names its flavor by id only.
        self.servers.extend(await self.server_details(params, lambda d: d if wanted(d) else None))

    async def deleted_servers(self) -> None:
        assert self.request.deleted_since is not None
        params = {
            "all_tenants": "1",
            "deleted": "true",
            "changes-since": format_instant(self.request.deleted_since),
        }
        # Kept raw until the flavors are known, as the live servers are: a whole life is booked
        # with the flavor the server ended with. A soft-deleted one is not gone: the listing of
        # every soft-deleted server observes it.
        self.deleted.extend(await self.server_details(params, lambda d: None if is_soft_deleted(d) else d))

    async def server_details(
        self, params: Mapping[str, str], convert: Callable[[Mapping[str, Any]], _T | None]
    ) -> list[_T]:
        """Nova's ``/servers/detail`` with ``params``, every page, each server through ``convert``."""
        return await list_all(
            self.client,
            self.compute + "/servers/detail",
            key="servers",
            links_key="servers_links",
            convert=convert,
            params=params,
            headers=self.nova,
        )

    async def flavor_catalog(self) -> None:
        listed = await list_all(
            self.client,
            self.compute + "/flavors/detail",
            key="flavors",
            links_key="flavors_links",
            convert=lambda d: d,
            params={"is_public": "None"},
            headers=self.nova,
        )
        self.flavors = {str(f["id"]): f for f in listed}

    async def volumes(self) -> None:
        url = self.grant.endpoint("block-storage") + "/volumes/detail"
        self.out.resources.extend(
            await list_all(
                self.client,
                url,
                key="volumes",
                links_key="volumes_links",
                convert=observe_volume,
                params={"all_tenants": "1"},
            )
        )

    async def floating_ips(self) -> None:
        url = under(self.grant.endpoint("network"), "/floatingips", "/v2.0")
        self.out.resources.extend(
            await list_all(
                self.client,
                url,
                key="floatingips",
                links_key="floatingips_links",
                convert=observe_floating_ip,
            )
        )

    async def images(self) -> None:
        url = under(self.grant.endpoint("image"), "/images", "/v2")
        seen: dict[str, ObservedResource] = {}
        # Hidden images are left out of a listing unless asked for; they exist all the same.
        for params in ({"visibility": "all"}, {"visibility": "all", "os_hidden": "true"}):
            for image in await list_all(
                self.client, url, key="images", links_key=None, convert=observe_image, params=params
            ):
                seen[image.resource_id] = image
        self.out.resources.extend(seen.values())

    async def loadbalancers(self) -> None:
        url = under(self.grant.endpoint("load-balancer"), "/lbaas/loadbalancers", "/v2")
        self.out.resources.extend(
            await list_all(
                self.client,
                url,
                key="loadbalancers",
                links_key="loadbalancers_links",
                convert=observe_loadbalancer,
            )
        )
