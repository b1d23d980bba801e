"""``tally sync CLOUD [--at T]`` and ``tally check-cloud CLOUD``.

``sync`` runs one sync of a configured cloud in this process, against the store
the settings name, and prints its answer (the route's 200 body plus status and,
for a failed run, the reasons its row holds). ``check-cloud`` is seed 001's
account check automated; it exits non-zero on any finding.

Exit codes of ``sync``: 0 completed, 1 failed, 2 bad request (unknown cloud, an
``--at`` this deployment does not take), 3 another run holds the cloud.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from tally.config import CloudEntry, CloudsConfigError, Settings, load_clouds_config
from tally.core import InstantError, parse_instant

from ._adapter import AccountCheck


def register(subparsers: Any) -> None:
    sync = subparsers.add_parser("sync", help="run one sync of a configured cloud and print its answer")
    sync.add_argument("cloud", help="the cloud, as the clouds config names it")
    sync.add_argument("--at", help="the told instant (RFC 3339); needs TALLY_REPORTING_SYNC_ALLOW_AT=true")
    sync.set_defaults(handler=run_sync_command)
    check = subparsers.add_parser("check-cloud", help="check the account a cloud's clouds.yaml entry names")
    check.add_argument("cloud", help="the cloud, as the clouds config names it")
    check.set_defaults(handler=run_check_command)


def _fail(message: str) -> int:
    print(f"tally: {message}", file=sys.stderr)
    return 2


async def run_sync_command(args: argparse.Namespace) -> int:
    from tally.ingest import IngestPipeline
    from tally.store import open_store

    from ._model import Status
    from ._service import SyncService

    settings = Settings()
    at = None
    if args.at is not None:
        if not settings.reporting_sync_allow_at:
            return _fail("this deployment does not take a sync instant; TALLY_REPORTING_SYNC_ALLOW_AT is off")
        try:
            at = parse_instant(args.at)
        except InstantError as exc:
            return _fail(f"--at: {exc}")
    try:
        async with open_store(settings.store_url) as store:
            if settings.reporting_migrate_on_start:
                await store.migrate_up()
            pipeline = IngestPipeline(store, require_size_schema=settings.ingest_require_size_schema)
            service = SyncService.from_settings(settings, store=store, pipeline=pipeline)
            outcome = await service.run_cloud(args.cloud, at)
    except CloudsConfigError as exc:
        return _fail(str(exc))
    if outcome.status is Status.UNKNOWN_CLOUD:
        return _fail(f"no cloud {args.cloud!r} is configured")
    if outcome.status is Status.LOCK_HELD:
        print(f"tally: a sync for cloud {args.cloud!r} is already running", file=sys.stderr)
        return 3
    answer: dict[str, Any] = {"status": outcome.status.value, **outcome.to_json()}
    if outcome.status in (Status.FAILED, Status.NOT_STARTED):
        answer["errors"] = list(outcome.stats.get("errors", []))
    print(json.dumps(answer, indent=2))
    return 0 if outcome.status is Status.COMPLETED else 1


async def run_check_command(args: argparse.Namespace) -> int:
    from ._adapter import adapter_class, validate_adapter_config

    settings = Settings()
    if settings.reporting_clouds_config is None:
        return _fail("TALLY_REPORTING_CLOUDS_CONFIG names no clouds config")
    try:
        entries = {e.cloud: e for e in load_clouds_config(settings.reporting_clouds_config)}
    except CloudsConfigError as exc:
        return _fail(str(exc))
    entry = entries.get(args.cloud)
    if entry is None:
        return _fail(f"no cloud {args.cloud!r} is configured")
    reason = validate_adapter_config(entry)
    if reason is not None:
        return _fail(f"cloud {args.cloud}: {reason}")
    # The adapter's own account check, known by name only: the framework imports no platform package.
    check: Callable[[CloudEntry], Awaitable[AccountCheck]] | None = getattr(
        adapter_class(entry.adapter), "check_account", None
    )
    if check is None:
        return _fail(f"the {entry.adapter} adapter has no account check")
    report = await check(entry)
    for line in report.ok:
        print(f"ok       {line}")
    for line in report.findings:
        print(f"FINDING  {line}")
    return 1 if report.findings else 0
