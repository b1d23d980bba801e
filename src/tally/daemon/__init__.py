"""The daemon: which actors run for the settings, signals, sd_notify; ``run_daemon`` is what ``tally run``
(``tally.cli.daemon``) runs. Importing it imports the HTTP stack, so the command line imports it only when
the daemon really runs."""

from ._collector import collector_checks, standalone_app
from ._run import run_daemon
from ._sizing import default_http_workers
from ._worker import run_http_worker

__all__ = ["collector_checks", "default_http_workers", "run_daemon", "run_http_worker", "standalone_app"]
