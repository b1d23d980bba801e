"""``scripts/devcloud install|start|stop|status|env|restart PROGRAM...``: one line per step, a
DevcloudError or a bad setting as one line on stderr with exit 2."""

from __future__ import annotations

import argparse
import json
import sys

from . import cloud, install, processes
from .errors import DevcloudError
from .layout import from_env


def _say(line: str) -> None:
    print(f"devcloud: {line}", flush=True)


def _print_memory(sizes: dict[str, tuple[int, int]]) -> None:
    print(f"{'program':<18} {'PSS MiB':>8} {'RSS MiB':>8}")
    for name, (pss, rss) in sorted(sizes.items()):
        print(f"{name:<18} {pss / 1024:>8.0f} {rss / 1024:>8.0f}")
    pss_all, rss_all = (sum(values) for values in zip(*sizes.values(), strict=True))
    print(f"{'all':<18} {pss_all / 1024:>8.0f} {rss_all / 1024:>8.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/devcloud", description="the development cloud (docs/devcloud.md)"
    )
    parser.add_argument("command", choices=("install", "start", "stop", "status", "env", "restart"))
    parser.add_argument("programs", nargs="*", help="restart: the programs, e.g. cinder-volume")
    args = parser.parse_args(argv)
    if bool(args.programs) != (args.command == "restart"):
        parser.error("restart takes the programs to restart; no other command takes any")
    try:
        layout = from_env()
        if args.command == "install":
            seconds = install.install(layout, layout.state / "install.log")
            _say(f"installed in {seconds:.0f}s" if seconds else f"{layout.venv} already holds the lock")
        elif args.command == "start":
            cloud.start(layout, _say)
        elif args.command == "restart":
            cloud.restart(layout, args.programs, _say)
        elif args.command == "stop":
            cloud.stop(layout, _say)
            _say("stopped")
        elif args.command == "status":
            now = cloud.status(layout)
            if not now["whole"]:
                _say(f"not running whole (running: {', '.join(now['running']) or 'nothing'})")
                return 3
            _say("running")
            _print_memory(processes.memory(layout))
        else:
            if not layout.info_file.is_file():
                raise DevcloudError(
                    f"no running cloud: {layout.info_file} is missing (scripts/devcloud start)"
                )
            print(json.dumps(json.loads(layout.info_file.read_text()), indent=2))
    except (DevcloudError, ValueError) as error:
        print(f"devcloud: {error}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
