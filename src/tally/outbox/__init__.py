"""The collector's outbox and sender: commit before ack, delete after acceptance.

``open_outbox`` opens the SQLite file (a write it cannot commit raises
``OutboxWriteError`` and leaves its reason in ``Outbox.write_problem``); ``Sender`` delivers its rows to an
``EventSink``: ``HttpSink`` (a Reporting API) or ``IngestSink`` (this daemon's
ingest pipeline).
"""

from ._metrics import WARNINGS_SUPPRESSED as WARNINGS_SUPPRESSED
from ._outbox import DeadLetterRow as DeadLetterRow
from ._outbox import Outbox as Outbox
from ._outbox import open_outbox as open_outbox
from ._sender import Sender as Sender
from ._sink import EventSink as EventSink
from ._sink import HttpSink as HttpSink
from ._sink import IngestSink as IngestSink
from ._sink import SinkConfigError as SinkConfigError
from ._write_fault import OutboxWriteError as OutboxWriteError

__all__ = [
    "WARNINGS_SUPPRESSED",
    "DeadLetterRow",
    "EventSink",
    "HttpSink",
    "IngestSink",
    "Outbox",
    "OutboxWriteError",
    "Sender",
    "SinkConfigError",
    "open_outbox",
]
