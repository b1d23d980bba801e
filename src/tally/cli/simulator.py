"""``tally simulator ...``: the simulator's commands. This module owns ``tally simulator serve``.

``serve`` hosts the fake OpenStack cloud over a world, standalone: the world of ``--seed`` and
``--period`` (the month generator) or one read from ``--world FILE`` (``World.to_json``). It answers
at the end of the period unless ``--at`` or ``--factor`` says otherwise, and the control endpoint
on the same listener moves the clock and switches faults at run time.

Other simulator subcommands join the ``simulator`` group through :data:`SUBCOMMAND_MODULES`: each
module listed there has ``register_simulator(subparsers)``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from tally.config import Settings
from tally.core import InstantError, parse_instant
from tally.simulation import serve_fake_cloud
from tally.simulator.clock import ClockError, VirtualClock
from tally.simulator.fakecloud import ApiFaults, FaultDocumentError, create_fake_cloud_app
from tally.simulator.world import VolumeType, World, WorldError

# The logger of these lines before the command moved here: the name log filters already know.
log = logging.getLogger("tally.simulator.commands")

#: Modules adding subcommands under ``tally simulator`` (each with ``register_simulator(subparsers)``).
SUBCOMMAND_MODULES: tuple[str, ...] = ("tally.cli.simulate",)


def register(subparsers: Any) -> None:
    simulator = subparsers.add_parser("simulator", help="the simulated month and its fake OpenStack cloud")
    sub = simulator.add_subparsers(dest="simulator_command", metavar="ACTION", required=True)
    serve = sub.add_parser(
        "serve", help="serve a world as a fake OpenStack cloud (keystone, five APIs, /clock)"
    )
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--world", type=Path, metavar="FILE", help="a world document (World.to_json)")
    source.add_argument("--seed", type=int, help="generate the month of this seed (with --period)")
    serve.add_argument("--period", metavar="YYYY-MM", help="the month to generate (with --seed)")
    serve.add_argument("--scale", type=float, default=1.0, help="tenant multiplier of the generated month")
    serve.add_argument("--cloud", default=None, help="cloud name of the generated month (TALLY_SIM_CLOUD)")
    serve.add_argument("--host", default=None, help="bind address (TALLY_SIM_HTTP_ADDR, default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="bind port (TALLY_SIM_HTTP_PORT); 0 picks one")
    serve.add_argument("--at", default=None, help="the virtual instant to start at (default: end of period)")
    serve.add_argument(
        "--factor", type=float, default=0.0, help="virtual seconds per wall second (0: stand still)"
    )
    serve.add_argument(
        "--extra-volume-types",
        type=int,
        default=0,
        metavar="N",
        help="add N private volume types (more than 1000 shows a client that cinder's type listing pages)",
    )
    serve.add_argument(
        "--faults",
        default="",
        help="faults at start, e.g. down=network,slow=image:5,no_service_type=block-storage,"
        "fail_third_page=instance,probe_refused,images_without_owner,flavors_refused,"
        "volume_types_refused,clock_ahead_s=120",
    )
    serve.set_defaults(handler=serve_command)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register_simulator(sub)


def load_world(args: argparse.Namespace, settings: Settings) -> World:
    """The world the arguments name; raises WorldError with the reason."""
    if args.world is not None:
        try:
            return World.from_json(Path(args.world).read_bytes())
        except OSError as exc:
            raise WorldError(f"cannot read world file {args.world}: {exc.strerror}") from exc
    if not args.period:
        raise WorldError("--seed needs --period YYYY-MM")
    simulator = importlib.import_module("tally.simulator")
    generate = getattr(simulator, "generate_world", None)
    if generate is None:
        raise WorldError("this build has no month generator; serve a world file with --world FILE")
    try:
        world: World = generate(
            args.seed, args.period, scale=args.scale, cloud=args.cloud or settings.sim_cloud
        )
    except ValueError as exc:  # the generator's own refusals (a period that has not ended, a bad scale)
        raise WorldError(str(exc)) from exc
    return world


def with_extra_volume_types(world: World, count: int) -> World:
    """``world`` with ``count`` more private volume types (``extra-00001``...), ids derived from the cloud."""
    if not 0 <= count <= 100_000:
        raise WorldError(f"--extra-volume-types must be 0 to 100000, not {count}")
    extra = tuple(
        VolumeType(
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"{world.cloud}/volume-type/{n}")), f"extra-{n:05d}", False
        )
        for n in range(1, count + 1)
    )
    return replace(world, volume_types=world.volume_types + extra) if extra else world


async def serve_command(args: argparse.Namespace) -> int:
    settings = Settings()
    try:
        world = with_extra_volume_types(load_world(args, settings), args.extra_volume_types)
        faults = ApiFaults.from_names(args.faults)
        start = parse_instant(args.at) if args.at else world.period_to
        clock = VirtualClock(start, args.factor)
    except (WorldError, FaultDocumentError, InstantError, ClockError) as exc:
        print(f"tally simulator serve: {exc}", file=sys.stderr)
        return 2
    host = args.host or settings.sim_http_addr
    port = settings.sim_http_port if args.port is None else args.port
    app = create_fake_cloud_app(world, clock, faults)
    async with anyio.create_task_group() as tg:
        bound = await tg.start(serve_fake_cloud, app, host, port)
        url_host = f"[{host}]" if ":" in host else host
        log.info("fake cloud serving cloud=%s resources=%d port=%d", world.cloud, len(world.resources), bound)
        print(
            f"fake cloud serving url=http://{url_host}:{bound} auth_url=http://{url_host}:{bound}/v3",
            flush=True,
        )
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                log.info("fake cloud stopping signal=%s", signal.Signals(signum).name)
                tg.cancel_scope.cancel()
                break
    return 0
