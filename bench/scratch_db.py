"""A PostgreSQL database a benchmark makes for its run and drops at the end, however the run ends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import psycopg


@contextmanager
def scratch_database(admin_url: str, prefix: str) -> Iterator[tuple[str, str]]:
    """A new database named ``prefix`` and a random suffix on ``admin_url``'s server: its name and URL
    (``admin_url`` with the database swapped, its query kept); dropped with its connections at exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name, urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
