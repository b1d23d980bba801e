"""The simulation harness: a generated month run through the real pipeline and judged by its oracle.

It drives the library (``tally.simulator``: world, generator, fake cloud, oracle, compare) against
what the composition root (``tally.app``) builds (store, ingest pipeline, collector, sync service):
``simulate`` runs a month, ``publisher`` and ``replay`` send its notifications to a broker,
``register`` hands its projects to a running daemon, ``report`` draws a comparison, and the usage
and rated checks hold the exports against the oracle. Only the command line imports it.
"""

from ._console_log import ThrottledLine as ThrottledLine
from ._console_log import simulator_logging as simulator_logging
from ._serve import serve_fake_cloud as serve_fake_cloud
