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
- A ``clouds-public.yaml`` beside it holds the profiles an entry's ``profile:``
  names (openstacksdk's own built-in profiles still apply).
- No file: every sync fails with the locations searched named.

openstacksdk still does the parse, the merge, the profile, domain and region
handling, and keystoneauth1 loads the entry's auth plugin from it (``validate``),
so an entry means here what it means to the ``openstack`` client on the host.
A file or an entry that cannot be used is refused in one line naming it.
"""

from __future__ import annotations

import logging
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from openstack.config.cloud_region import CloudRegion
from openstack.config.loader import OpenStackConfig
from openstack.config.vendors import get_profile

from tally.reconcile import RunAborted

log = logging.getLogger(__name__)

SITE_CLOUDS_YAML = Path("/etc/openstack/clouds.yaml")


@dataclass(frozen=True, slots=True)
class ResolvedCloud:
    """One clouds.yaml entry, resolved, with the auth plugin keystoneauth1 loaded for it.

    ``region`` is openstacksdk's ``CloudRegion``: its config holds secrets, never log it."""

    entry: str
    path: Path
    region: CloudRegion

    @property
    def auth_type(self) -> str:
        return str(self.region.config.get("auth_type") or "password")

    @property
    def auth(self) -> Mapping[str, Any]:
        return dict(self.region.config.get("auth") or {})

    @property
    def region_name(self) -> str | None:
        return self.region.region_name or None

    @property
    def interface(self) -> str:
        return str(self.region.get_interface() or "public")

    def refused(self, reason: object) -> RunAborted:
        return refused(self.entry, reason)


def refused(entry: str, reason: object) -> RunAborted:
    """The seed's refusal of an entry: ``authenticating against the cloud "X": reason``, one line."""
    return RunAborted(f'authenticating against the cloud "{entry}": {one_line(reason)}')


def one_line(reason: object) -> str:
    """An exception's (or any) text on one line: a YAML error spans several, an OS error names its file."""
    return " ".join(str(reason).split())


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


# The secret each of these plugins cannot go without, and the seed's (gophercloud's) words for its absence:
# keystoneauth1 would send a password of null, and words a missing credential secret otherwise.
SECRETS = {
    "password": ("password", "You must provide a password to authenticate"),
    "v3password": ("password", "You must provide a password to authenticate"),
    "v3applicationcredential": (
        "application_credential_secret",
        "You must provide an Application Credential Secret",
    ),
    "applicationcredential": (
        "application_credential_secret",
        "You must provide an Application Credential Secret",
    ),
}


def missing_secret(auth_type: str, auth: object) -> str | None:
    """Why an entry of ``auth_type`` cannot authenticate for want of its secret, or None."""
    needed = SECRETS.get(auth_type.lower())
    if needed is None:
        return None
    option, reason = needed
    given = auth.get(option) if isinstance(auth, Mapping) else None
    return None if given else reason


# Python's words for a plugin built without an argument its __init__ cannot go without (keystoneauth1
# checks only the options its loader marks required: ``token`` of the token plugins, ``passcode`` of v3totp).
_MISSING_ARGUMENTS = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.+)$")


def plugin_reason(exc: Exception) -> object:
    """Why keystoneauth1 could not build an entry's plugin; a missing argument in keystoneauth1's words
    for a missing option (``Auth plugin requires parameters which were not given: token``), not Python's."""
    found = _MISSING_ARGUMENTS.search(str(exc)) if isinstance(exc, TypeError) else None
    if found is None:
        return exc
    names = re.findall(r"'([^']+)'", found.group(1))
    return "Auth plugin requires parameters which were not given: " + ", ".join(names)


def _check_yaml(path: Path, key: str, *, optional: bool = False) -> Mapping[str, Any]:
    """The ``key`` mapping of ``path`` (empty for an absent ``optional`` file); raise for a file
    openstacksdk would skip in silence (unreadable, not YAML, no ``key`` mapping), so an entry is not
    reported missing from a file that was never read. An ``optional`` file (one beside clouds.yaml) is
    named in its error: the refusal names clouds.yaml, not the file at fault."""
    if optional and not path.is_file():
        return {}
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        if not optional:
            raise
        raise ValueError(f"{path}: {exc}") from exc
    if not isinstance(document, Mapping) or not isinstance(document.get(key), Mapping):
        raise ValueError(f"{path} holds no {key} mapping")
    found: Mapping[str, Any] = document[key]
    return found


def _check_profile(entry: object, public: Mapping[str, Any], public_path: Path) -> None:
    """Raise for a ``profile:`` no file or built-in defines: openstacksdk only logs a warning and goes
    on without it, so the refusal would be the misleading "not given: auth_url" of the missing defaults.
    A profile named by a URL is fetched by openstacksdk and refused there."""
    name = entry.get("profile") if isinstance(entry, Mapping) else None
    if not isinstance(name, str) or name in public or urllib.parse.urlparse(name).netloc:
        return
    if get_profile(name) is None:
        raise ValueError(
            f'the profile "{name}" is neither in {public_path} nor one of openstacksdk\'s vendor profiles'
        )


def resolve_cloud(
    os_cloud: str, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ResolvedCloud:
    """Resolve the clouds.yaml entry ``os_cloud`` and load its auth plugin; raises ``RunAborted``.

    A file that cannot be read or parsed, or an entry it lacks, is refused as ``resolving the
    clouds.yaml entry``; an entry keystoneauth1 cannot load a plugin from (no auth_url, an unknown
    auth_type, an option the plugin needs) as the seed's ``authenticating against the cloud``."""
    env = os.environ if env is None else env
    path = find_clouds_yaml(env, cwd or Path.cwd())
    secure = path.with_name("secure.yaml")
    public = path.with_name("clouds-public.yaml")
    overrides: dict[str, Any] = {}
    if env.get("OS_REGION_NAME"):
        overrides["region_name"] = env["OS_REGION_NAME"]
    if env.get("OS_INTERFACE"):
        overrides["interface"] = env["OS_INTERFACE"]
    try:
        clouds = _check_yaml(path, "clouds")
        _check_yaml(secure, "clouds", optional=True)
        _check_profile(clouds.get(os_cloud), _check_yaml(public, "public-clouds", optional=True), public)
        config = OpenStackConfig(
            config_files=[str(path)],
            secure_files=[str(secure)] if secure.is_file() else [],
            vendor_files=[str(public)] if public.is_file() else [],
            load_envvars=False,
        )
        unloaded = config.get_one(cloud=os_cloud, validate=False, **overrides)
    except Exception as exc:
        # SDKException, OSError, YAMLError, ValueError, and whatever else openstacksdk raises for an entry
        # of an unexpected shape (a string where a mapping belongs): one line, never a traceback.
        raise RunAborted(f'resolving the clouds.yaml entry "{os_cloud}" in {path}: {one_line(exc)}') from exc
    missing = missing_secret(str(unloaded.config.get("auth_type") or "password"), unloaded.config.get("auth"))
    if missing is not None:
        raise refused(os_cloud, missing)
    try:
        region = config.get_one(cloud=os_cloud, validate=True, **overrides)
    except Exception as exc:
        # keystoneauth1's plugin loading: a missing option, an unknown plugin, or the plugin's own error.
        raise refused(os_cloud, plugin_reason(exc)) from exc
    return ResolvedCloud(entry=os_cloud, path=path, region=region)
