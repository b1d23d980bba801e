"""The clouds config file (``TALLY_REPORTING_CLOUDS_CONFIG``): which clouds this process reconciles.

::

    clouds:
      - cloud: os-prod-eu1
        platform: openstack
        adapter: openstack
        adapter_config: {os_cloud: os-prod-eu1, include_octavia: true}
        sync_interval_s: 600        # ours: the built-in scheduler's interval; 0 = only on request
        keystone: {os_cloud: tally-service}  # ours: this cloud's tenants read with keystone tokens,
                                    # checked by that clouds.yaml entry's keystone (a service credential)

Parsing is strict: a key this file does not define is refused with the key
named, so a misspelling is learnt rather than silently ignored. The cloud, its
platform and its adapter are checked here, when the file is read. What an
adapter makes of ``adapter_config`` is the adapter's business; this module keeps
it as the mapping it found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ENTRY_KEYS = ("cloud", "platform", "adapter", "adapter_config", "sync_interval_s", "keystone")
KNOWN_ADAPTERS = frozenset({"openstack"})
RESERVED = frozenset({"meta", "partner"})
DEFAULT_SYNC_INTERVAL_S = 600
MAX_SYNC_INTERVAL_S = 86400 * 7


class CloudsConfigError(ValueError):
    """The clouds config file cannot be used; the text names the file, the entry and the key."""


@dataclass(frozen=True, slots=True)
class CloudEntry:
    """One cloud to reconcile. Invariant: ``cloud`` is unique within the file."""

    cloud: str
    platform: str
    adapter: str
    adapter_config: Mapping[str, Any] = field(default_factory=dict)
    sync_interval_s: int = DEFAULT_SYNC_INTERVAL_S
    keystone_os_cloud: str | None = None  # the clouds.yaml entry checking this cloud's keystone tokens


def _text(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CloudsConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _keystone(value: object, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise CloudsConfigError(f"{where}: keystone must be a mapping with os_cloud")
    for key in value:
        if key != "os_cloud":
            raise CloudsConfigError(f"{where}: keystone: unknown key {key!r}")
    return _text(value, "os_cloud", f"{where}: keystone")


def parse_clouds_config(document: object, *, source: str = "clouds config") -> tuple[CloudEntry, ...]:
    """Validate a parsed clouds config document into its entries."""
    if document is None:
        return ()
    if not isinstance(document, Mapping):
        raise CloudsConfigError(f"{source}: the document must be a mapping with a clouds list")
    for key in document:
        if key != "clouds":
            raise CloudsConfigError(f"{source}: unknown key {key!r}")
    raw = document.get("clouds") or []
    if not isinstance(raw, list):
        raise CloudsConfigError(f"{source}: clouds must be a list")
    entries: list[CloudEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"{source}: clouds[{index}]"
        if not isinstance(item, Mapping):
            raise CloudsConfigError(f"{where}: an entry must be a mapping")
        for key in item:
            if key not in ENTRY_KEYS:
                raise CloudsConfigError(f"{where}: unknown key {key!r}")
        cloud = _text(item, "cloud", where)
        where = f"{source}: cloud {cloud!r}"
        if cloud in seen:
            raise CloudsConfigError(f"{where}: the cloud is named twice")
        seen.add(cloud)
        platform = _text(item, "platform", where)
        if platform in RESERVED or cloud in RESERVED:
            raise CloudsConfigError(f"{where}: platform and cloud must not be one of {sorted(RESERVED)}")
        adapter = _text(item, "adapter", where)
        if adapter not in KNOWN_ADAPTERS:
            raise CloudsConfigError(f"{where}: unknown adapter {adapter!r} (known: {sorted(KNOWN_ADAPTERS)})")
        adapter_config = item.get("adapter_config", {})
        if adapter_config is None:
            adapter_config = {}
        if not isinstance(adapter_config, Mapping):
            raise CloudsConfigError(f"{where}: adapter_config must be a mapping")
        interval = item.get("sync_interval_s", DEFAULT_SYNC_INTERVAL_S)
        if (
            isinstance(interval, bool)
            or not isinstance(interval, int)
            or not 0 <= interval <= MAX_SYNC_INTERVAL_S
        ):
            raise CloudsConfigError(
                f"{where}: sync_interval_s must be an integer from 0 to {MAX_SYNC_INTERVAL_S}"
            )
        keystone = _keystone(item.get("keystone"), where)
        entries.append(CloudEntry(cloud, platform, adapter, dict(adapter_config), interval, keystone))
    return tuple(entries)


def load_clouds_config(path: Path) -> tuple[CloudEntry, ...]:
    """Read and validate the clouds config file at ``path``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CloudsConfigError(f"{path}: cannot read the clouds config: {exc.strerror or exc}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CloudsConfigError(f"{path}: not YAML: {exc}") from exc
    return parse_clouds_config(document, source=str(path))
