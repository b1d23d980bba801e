"""The collector's outbox and sender: commit before ack, delete after acceptance.

``open_outbox`` opens the SQLite file (a write it cannot commit raises
``OutboxWriteError`` and leaves its reason in ``Outbox.write_problem``); ``Sender`` delivers its rows to an
``EventSink``: ``HttpSink`` (a Reporting API) or ``IngestSink`` (this daemon's
ingest pipeline).
"""

from ._outbox import DeadLetterRow as DeadLetterRow
from ._outbox import Outbox as Outbox
from ._outbox import OutboxRow as OutboxRow
from ._outbox import OutboxStatistics as OutboxStatistics
from ._outbox import open_outbox as open_outbox
from ._sender import Sender as Sender
from ._sender import SenderStatistics as SenderStatistics
from ._sink import DeliveryResult as DeliveryResult
from ._sink import DeliveryStatus as DeliveryStatus
from ._sink import EventSink as EventSink
from ._sink import HttpSink as HttpSink
from ._sink import IngestSink as IngestSink
from ._sink import Refusal as Refusal
from ._sink import SinkConfigError as SinkConfigError
from ._write_fault import OutboxWriteError as OutboxWriteError

__all__ = [
    "DeadLetterRow",
    "DeliveryResult",
    "DeliveryStatus",
    "EventSink",
    "HttpSink",
    "IngestSink",
    "Outbox",
    "OutboxRow",
    "OutboxStatistics",
    "OutboxWriteError",
    "Refusal",
    "Sender",
    "SenderStatistics",
    "SinkConfigError",
    "open_outbox",
]
