"""What the simulator's commands share: the console they print on, the one-line failure (exit 2), and
the month their common arguments describe."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from tally.config import Settings
from tally.simulator.clock import ClockError
from tally.simulator.faults import parse_faults
from tally.simulator.generator import GeneratorError, Month, generate_month

MAX_SEED = 2**64 - 1


def output_console() -> Console:
    """The console the verdicts print on."""
    # Off a terminal rich would wrap at 80 columns; a log or a pipe reads better unwrapped.
    return Console() if sys.stdout.isatty() else Console(width=160)


def month_of_args(args: argparse.Namespace, settings: Settings) -> Month:
    """The month the common arguments (seed, period, scale, days, faults, cloud) describe."""
    if args.factor < 0:
        raise ClockError(f"factor {args.factor} must not be negative")
    if not 0 <= args.seed <= MAX_SEED:
        # The oracle and the files carry the seed as a JSON integer, 64 bits unsigned at most.
        raise GeneratorError(f"seed {args.seed} is out of range: 0 to {MAX_SEED}")
    faults = parse_faults(args.faults)
    return generate_month(
        args.seed,
        args.period,
        scale=args.scale,
        cloud=args.cloud or settings.sim_cloud,
        faults=faults,
        days=args.days,
    )
