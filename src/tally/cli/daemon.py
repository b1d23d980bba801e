"""The daemon's commands: ``tally run`` and ``tally config show``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

from tally.config import (
    CloudsConfigError,
    ConfigError,
    Settings,
    load_clouds_config,
    load_settings,
    render_settings,
    setup_logging,
)


def _settings_or_exit(*, check_clouds: bool = False) -> Settings | None:
    """The settings, or None after printing the one line that says what is wrong."""
    try:
        settings = load_settings()
        if check_clouds and settings.reporting_clouds_config is not None:
            # Checked before anything starts, so the daemon never runs half-configured.
            load_clouds_config(settings.reporting_clouds_config)
    except (ConfigError, CloudsConfigError) as exc:
        print(f"tally: {exc}", file=sys.stderr)
        return None
    return settings


def _run(args: argparse.Namespace) -> int:
    if args.http_worker:
        from tally.daemon import run_http_worker  # its settings come from the main process, on stdin

        return run_http_worker()
    # Logging comes first so that warnings about unknown variables are formatted like every other line.
    setup_logging(os.environ.get("TALLY_LOG_LEVEL", "INFO"), os.environ.get("TALLY_LOG_FORMAT", "plain"))
    settings = _settings_or_exit(check_clouds=True)
    if settings is None:
        return 2
    from tally.http import PolicyFileError, keystone_tokens
    from tally.reconcile import RunAborted

    try:
        # The policy file and each keystone's clouds.yaml entry: refused before anything starts, in one line.
        keystone_tokens(settings)
    except (PolicyFileError, RunAborted, CloudsConfigError) as exc:
        print(f"tally: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_format)
    from tally.daemon import run_daemon  # the HTTP stack is imported only when the daemon really runs

    return anyio.run(run_daemon, settings)


def _config_show(args: argparse.Namespace) -> int:
    settings = _settings_or_exit()
    if settings is None:
        return 2
    for line in render_settings(settings):
        print(line)
    return 0


def register(subparsers: Any) -> None:
    run = subparsers.add_parser("run", help="run the daemon: the actor tree the settings ask for")
    # One of the daemon's HTTP workers (docs/daemon.md, "HTTP workers"): started by `tally run` only.
    run.add_argument("--http-worker", action="store_true", help=argparse.SUPPRESS)
    run.set_defaults(handler=_run)
    config = subparsers.add_parser("config", help="inspect the settings")
    config_commands = config.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    show = config_commands.add_parser("show", help="print the effective settings, secrets redacted")
    show.set_defaults(handler=_config_show)
