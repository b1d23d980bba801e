"""``scripts/devcloud install|start|stop|status|env``: one line per step, a DevcloudError or a bad
setting as one line on stderr with exit 2."""

from __future__ import annotations

import argparse
import json
import sys

from . import cloud, install
from .errors import DevcloudError
from .layout import from_env


def _say(line: str) -> None:
    print(f"devcloud: {line}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/devcloud", description="the development cloud (docs/devcloud.md)"
    )
    parser.add_argument("command", choices=("install", "start", "stop", "status", "env"))
    args = parser.parse_args(argv)
    try:
        layout = from_env()
        if args.command == "install":
            seconds = install.install(layout, layout.state / "install.log")
            _say(f"installed in {seconds:.0f}s" if seconds else f"{layout.venv} already holds the lock")
        elif args.command == "start":
            cloud.start(layout, _say)
        elif args.command == "stop":
            cloud.stop(layout, _say)
            _say("stopped")
        elif args.command == "status":
            now = cloud.status(layout)
            _say("running" if now["whole"] else f"not running (missing: {', '.join(now['missing'])})")
            return 0 if now["whole"] else 3
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
