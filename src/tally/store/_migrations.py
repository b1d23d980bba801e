"""Numbered migrations per dialect: ``migrations/<dialect>/NNNN_name.sql`` with up and down parts.

A file holds its up part after a line ``-- migrate:up`` and its down part after
``-- migrate:down``. Versions are the file's number; they must be dense from 1
so that ``schema_status`` can tell a database that is behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from ._interface import MigrationError

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_UP = "-- migrate:up"
_DOWN = "-- migrate:down"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    up: str
    down: str


def load_migrations(dialect: str) -> list[Migration]:
    """The dialect's migrations in version order; a malformed file or a gap is an error."""
    folder = resources.files("tally.store").joinpath("migrations", dialect)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match is None:
            continue
        text = entry.read_text(encoding="utf-8")
        if _UP not in text or _DOWN not in text:
            raise MigrationError(f"migration {dialect}/{entry.name} lacks a '{_UP}' or '{_DOWN}' line")
        _, rest = text.split(_UP, 1)
        up, down = rest.split(_DOWN, 1)
        found.append(Migration(int(match.group(1)), match.group(2), up.strip(), down.strip()))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"migrations of {dialect} skip version {expected} (found {migration.version})"
            )
    return found
