"""clouds.yaml resolution, as seed 000 states it, on top of openstacksdk's own loader.

The rules, and where they differ from ``openstack.config`` unwrapped:

- ``OS_CLIENT_CONFIG_FILE`` set: that file is the *only* location searched
  (openstacksdk merely puts it first).
- Otherwise, in order: ``clouds.yaml`` in the working directory,
  ``${XDG_CONFIG_HOME:-$HOME/.config}/openstack/clouds.yaml``,
  ``/etc/openstack/clouds.yaml`` (openstacksdk searches more places and suffixes).
- The first file found is used; a ``secure.yaml`` *beside it* is merged over it
  (openstacksdk searches for secure files on its own path).
- ``OS_REGION_NAME`` and ``OS_INTERFACE`` override the entry's region_name and
  interface, for every cloud; ``OS_CLOUD`` and other ``OS_*`` variables do not
  reach the parse (openstacksdk would build an ``envvars`` cloud from them).
- No file: every sync fails with the locations searched named.

openstacksdk still does the parse, the merge, the profile and region handling,
so an entry means here what it means to the ``openstack`` client on the host.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openstack.config.loader import OpenStackConfig

from openstack import exceptions as sdk_exceptions
from tally.reconcile import RunAborted

log = logging.getLogger(__name__)

SITE_CLOUDS_YAML = Path("/etc/openstack/clouds.yaml")


@dataclass(frozen=True, slots=True)
class ResolvedCloud:
    """One clouds.yaml entry, resolved. ``auth`` holds secrets: never log it."""

    entry: str
    path: Path
    auth_type: str
    auth: Mapping[str, Any]
    region_name: str | None
    interface: str
    verify: bool | str


def clouds_yaml_locations(env: Mapping[str, str], cwd: Path) -> list[Path]:
    """The files searched, in order."""
    override = env.get("OS_CLIENT_CONFIG_FILE")
    if override:
        return [Path(override)]
    config_home = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return [cwd / "clouds.yaml", Path(config_home) / "openstack" / "clouds.yaml", SITE_CLOUDS_YAML]


def find_clouds_yaml(env: Mapping[str, str], cwd: Path) -> Path:
    """The first existing location; raises ``RunAborted`` naming every location searched."""
    locations = clouds_yaml_locations(env, cwd)
    for path in locations:
        if path.is_file():
            return path
    raise RunAborted("no clouds.yaml found; searched " + ", ".join(str(p) for p in locations))


def warn_if_unpinned(env: Mapping[str, str] = os.environ) -> bool:
    """Warn at startup when OS_CLIENT_CONFIG_FILE is unset; True when it warned."""
    if env.get("OS_CLIENT_CONFIG_FILE"):
        return False
    log.warning(
        "OS_CLIENT_CONFIG_FILE is unset: a clouds.yaml in the working directory would outrank "
        "the mounted one; set it to the file the deployment mounts"
    )
    return True


def resolve_cloud(
    os_cloud: str, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ResolvedCloud:
    """Resolve the clouds.yaml entry ``os_cloud``; raises ``RunAborted`` when it cannot be."""
    env = os.environ if env is None else env
    path = find_clouds_yaml(env, cwd or Path.cwd())
    secure = path.with_name("secure.yaml")
    try:
        config = OpenStackConfig(
            config_files=[str(path)],
            secure_files=[str(secure)] if secure.is_file() else [],
            vendor_files=[],
            load_envvars=False,
        )
        overrides: dict[str, Any] = {}
        if env.get("OS_REGION_NAME"):
            overrides["region_name"] = env["OS_REGION_NAME"]
        if env.get("OS_INTERFACE"):
            overrides["interface"] = env["OS_INTERFACE"]
        region = config.get_one(cloud=os_cloud, validate=False, **overrides)
    except (sdk_exceptions.SDKException, OSError, ValueError) as exc:
        raise RunAborted(f'resolving the clouds.yaml entry "{os_cloud}" in {path}: {exc}') from exc
    cfg = region.config
    verify: bool | str = bool(cfg.get("verify", True))
    if verify and cfg.get("cacert"):
        verify = str(cfg["cacert"])
    return ResolvedCloud(
        entry=os_cloud,
        path=path,
        auth_type=str(cfg.get("auth_type") or "password"),
        auth=dict(cfg.get("auth") or {}),
        region_name=region.region_name or None,
        interface=str(cfg.get("interface") or "public"),
        verify=verify,
    )
