"""``tally sync CLOUD [--at T]``: one sync of a configured cloud in this process, against the store
the settings name; prints its answer (the route's 200 body plus status and, for a failed run, the
reasons its row holds).

Exit codes: 0 completed, 1 failed, 2 bad request (unknown cloud, an ``--at`` this deployment does not
take), 3 another run holds the cloud.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tally.config import CloudsConfigError, Settings
from tally.core import InstantError, parse_instant

from ._refuse import fail


def register(subparsers: Any) -> None:
    sync = subparsers.add_parser("sync", help="run one sync of a configured cloud and print its answer")
    sync.add_argument("cloud", help="the cloud, as the clouds config names it")
    sync.add_argument("--at", help="the told instant (RFC 3339); needs TALLY_REPORTING_SYNC_ALLOW_AT=true")
    sync.set_defaults(handler=run_sync_command)


async def run_sync_command(args: argparse.Namespace) -> int:
    from tally.app import open_sync_service
    from tally.reconcile import Status

    settings = Settings()
    at = None
    if args.at is not None:
        if not settings.reporting_sync_allow_at:
            return fail(
                "", "this deployment does not take a sync instant; TALLY_REPORTING_SYNC_ALLOW_AT is off"
            )
        try:
            at = parse_instant(args.at)
        except InstantError as exc:
            return fail("", f"--at: {exc}")
    try:
        async with open_sync_service(settings) as service:
            outcome = await service.run_cloud(args.cloud, at)
    except CloudsConfigError as exc:
        return fail("", str(exc))
    if outcome.status is Status.UNKNOWN_CLOUD:
        return fail("", f"no cloud {args.cloud!r} is configured")
    if outcome.status is Status.LOCK_HELD:
        print(f"tally: a sync for cloud {args.cloud!r} is already running", file=sys.stderr)
        return 3
    answer: dict[str, Any] = {"status": outcome.status.value, **outcome.to_json()}
    if outcome.status in (Status.FAILED, Status.NOT_STARTED):
        answer["errors"] = list(outcome.stats.get("errors", []))
    print(json.dumps(answer, indent=2))
    return 0 if outcome.status is Status.COMPLETED else 1
