"""``tally check-cloud CLOUD``: seed 001's account check automated; it exits non-zero on any finding."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from tally.config import CloudEntry, CloudsConfigError, Settings, load_clouds_config
from tally.reconcile import AccountCheck, adapter_class, validate_adapter_config

from ._refuse import fail


def register(subparsers: Any) -> None:
    check = subparsers.add_parser("check-cloud", help="check the account a cloud's clouds.yaml entry names")
    check.add_argument("cloud", help="the cloud, as the clouds config names it")
    check.set_defaults(handler=run_check_command)


async def run_check_command(args: argparse.Namespace) -> int:
    settings = Settings()
    if settings.reporting_clouds_config is None:
        return fail("", "TALLY_REPORTING_CLOUDS_CONFIG names no clouds config")
    try:
        entries = {e.cloud: e for e in load_clouds_config(settings.reporting_clouds_config)}
    except CloudsConfigError as exc:
        return fail("", str(exc))
    entry = entries.get(args.cloud)
    if entry is None:
        return fail("", f"no cloud {args.cloud!r} is configured")
    reason = validate_adapter_config(entry)
    if reason is not None:
        return fail("", f"cloud {args.cloud}: {reason}")
    # The adapter's own account check, known by name only: the framework imports no platform package.
    check: Callable[[CloudEntry], Awaitable[AccountCheck]] | None = getattr(
        adapter_class(entry.adapter), "check_account", None
    )
    if check is None:
        return fail("", f"the {entry.adapter} adapter has no account check")
    report = await check(entry)
    for line in report.ok:
        print(f"ok       {line}")
    for line in report.findings:
        print(f"FINDING  {line}")
    return 1 if report.findings else 0
