"""The deploy tests' fixture: ``daemon_scrapes`` (see ``deploy_support``), once per run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from deploy_support import Scrapes, scrape_daemon


@pytest.fixture(scope="session")
def daemon_scrapes(tmp_path_factory: pytest.TempPathFactory, amqp_url: str) -> Iterator[Scrapes]:
    yield from scrape_daemon(tmp_path_factory.mktemp("deploy"), amqp_url)
