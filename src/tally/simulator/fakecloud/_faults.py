"""The faults the fake cloud can be told to show, set at start and switched at run time.

Each switch reproduces one way a real cloud fails a sync, as the seed describes
it: a service the cloud does not run, one that is down or slow, an API whose keystone_authtoken lacks
service_type (it refuses restricted application credentials with 401), a listing
that fails on its third page, a refused admin probe, images glance names no
owner for, refused flavor and volume type listings, and a platform clock ahead
of the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Final

#: The services of the fake, by their catalog type.
SERVICES: Final = ("identity", "compute", "block-storage", "network", "image", "load-balancer")

#: Listings that can fail on their third page, named by resource type.
LISTINGS: Final = ("instance", "deleted_instance", "volume", "floating_ip", "image", "loadbalancer")


class FaultDocumentError(ValueError):
    """A fault document the fake cannot take; the message names the member and the value."""


@dataclass
class ApiFaults:
    """The switches; all off by default. Mutable: the control endpoint changes them in place.

    - ``absent``: services the cloud does not run: left out of the catalog, their paths answered 404.
    - ``down``: services answering 503, as the proxy in front of a stopped service does.
    - ``slow``: seconds of latency added to every request of a service.
    - ``no_service_type``: services that refuse every request of a restricted application
      credential with 401 (their keystone_authtoken sets no service_type).
    - ``fail_third_page``: listings whose third page is answered 500.
    - ``probe_refused``: nova refuses ``servers/detail`` with all_tenants and limit=1 (403).
    - ``images_without_owner``: glance lists every image with ``owner: null``.
    - ``flavors_refused`` / ``volume_types_refused``: those listings are answered 403.
    - ``clock_ahead_s``: the platform's clock runs this many seconds ahead of the caller's,
      so every timestamp it shows is shifted forward by it.
    """

    absent: set[str] = field(default_factory=set)
    down: set[str] = field(default_factory=set)
    slow: dict[str, float] = field(default_factory=dict)
    no_service_type: set[str] = field(default_factory=set)
    fail_third_page: set[str] = field(default_factory=set)
    probe_refused: bool = False
    images_without_owner: bool = False
    flavors_refused: bool = False
    volume_types_refused: bool = False
    clock_ahead_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "absent": sorted(self.absent),
            "down": sorted(self.down),
            "slow": dict(sorted(self.slow.items())),
            "no_service_type": sorted(self.no_service_type),
            "fail_third_page": sorted(self.fail_third_page),
            "probe_refused": self.probe_refused,
            "images_without_owner": self.images_without_owner,
            "flavors_refused": self.flavors_refused,
            "volume_types_refused": self.volume_types_refused,
            "clock_ahead_s": self.clock_ahead_s,
        }

    def update(self, doc: object) -> None:
        """Apply a (partial) fault document; nothing changes if any member is wrong."""
        if not isinstance(doc, dict):
            raise FaultDocumentError("the faults document must be a JSON object")
        known = {f.name for f in fields(self)}
        staged: dict[str, Any] = {}
        for key, value in doc.items():
            if key not in known:
                raise FaultDocumentError(f"unknown fault {key!r}; known: {sorted(known)}")
            staged[key] = _check(key, value)
        for key, value in staged.items():
            setattr(self, key, value)

    @classmethod
    def from_names(cls, text: str) -> ApiFaults:
        """Faults from a command-line list: ``down=network,slow=image:5,probe_refused,clock_ahead_s=120``."""
        faults = cls()
        doc: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            if name in ("absent", "down", "no_service_type", "fail_third_page"):
                doc.setdefault(name, []).extend(v for v in value.split("+") if v)
            elif name == "slow":
                service, _, seconds = value.partition(":")
                try:
                    doc.setdefault("slow", {})[service] = float(seconds)
                except ValueError:
                    raise FaultDocumentError(f"slow fault {value!r} is not SERVICE:SECONDS") from None
            elif name == "clock_ahead_s":
                try:
                    doc[name] = float(value)
                except ValueError:
                    raise FaultDocumentError(f"clock_ahead_s {value!r} is not a number") from None
            else:
                doc[name] = True
        faults.update(doc)
        return faults


def _names(key: str, value: object, allowed: tuple[str, ...]) -> set[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FaultDocumentError(f"{key} must be a list of names")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise FaultDocumentError(f"{key}: unknown {unknown}; known: {list(allowed)}")
    return set(value)


def _check(key: str, value: object) -> Any:
    if key in ("absent", "down", "no_service_type"):
        return _names(key, value, SERVICES)
    if key == "fail_third_page":
        return _names(key, value, LISTINGS)
    if key == "slow":
        if not isinstance(value, dict):
            raise FaultDocumentError("slow must map service names to seconds")
        _names(key, list(value), SERVICES)
        out: dict[str, float] = {}
        for service, seconds in value.items():
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 3600:
                raise FaultDocumentError(f"slow[{service}] must be seconds in 0..3600, not {seconds!r}")
            out[service] = float(seconds)
        return out
    if key == "clock_ahead_s":
        if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > 86400 * 365:
            raise FaultDocumentError(f"clock_ahead_s must be a number of seconds, not {value!r}")
        return float(value)
    if not isinstance(value, bool):
        raise FaultDocumentError(f"{key} must be true or false, not {value!r}")
    return value
