"""The parts of ``bench.reads`` (its docstring says what is measured and against which targets), one job
each: ``serving`` the servers read from (the floor, the api, the fake keystone, the canned page),
``load`` the load generator, ``servers`` starting them and measuring one run, ``report`` the
``RATIO`` lines and the targets. This module owns what they share (the database, the page, the
warm-up) and imports nothing heavy: every load process starts from it.
"""

from __future__ import annotations

import os

PG_ADMIN = os.environ.get("TALLY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PAGE = 100
LISTINGS = {
    "events": f"/api/v1/events?limit={PAGE}",
    "resources": f"/api/v1/resources?limit={PAGE}",
}
WARMUP_S = 0.5
KEYSTONE_CLOUDS_YAML = "TALLY_BENCH_KEYSTONE_CLOUDS_YAML"  # the api server's service credential
