"""A service publishing through oslo.messaging's own Notifier, as nova does: run as a process of its own.

    python oslo_publisher.py URL EXCHANGE COUNT RATE [START]

Publishes COUNT ``compute.instance.create.end`` notifications (instance ``vm-START`` on) on the
topic exchange EXCHANGE, with OpenStack's defaults (``messagingv2``, topic ``notifications``,
``amqp_durable_queues = false``), at about RATE per second, retrying forever through broker
outages as the services do (``retry=-1``). Prints ``published N`` when done, and ``dropped vm-N``
for each notification the Notifier itself gave up on: oslo.messaging's driver logs "Could not send
notification" and drops the message when sending raises anything its retries do not cover
(``oslo_messaging.notify.messaging``), so that notification was never published, in a test as from
nova.
"""

from __future__ import annotations

import logging
import sys
import time

import oslo_messaging
from collector_support import instance_payload
from oslo_config import cfg


class GaveUp(logging.Handler):
    """Counts the Notifier's "Could not send notification" records."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Could not send notification"):
            self.count += 1


def main(url: str, exchange: str, count: int, rate: float, start: int = 0) -> None:
    conf = cfg.ConfigOpts()
    conf([], project="tally-test")
    oslo_messaging.set_transport_defaults(control_exchange=exchange)
    transport = oslo_messaging.get_notification_transport(conf, url=url)
    notifier = oslo_messaging.Notifier(
        transport, publisher_id="compute.test-host", driver="messagingv2", topics=["notifications"], retry=-1
    )
    gave_up = GaveUp()
    logging.getLogger("oslo_messaging.notify.messaging").addHandler(gave_up)
    began = time.monotonic()
    for n in range(start, start + count):
        payload = instance_payload(f"vm-{n}", "tenant-1")
        before = gave_up.count
        notifier.info({"project_id": "tenant-1"}, "compute.instance.create.end", payload)
        if gave_up.count > before:
            print(f"dropped vm-{n}", flush=True)
        ahead = began + (n - start + 1) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    transport.cleanup()
    print(f"published {count}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), *map(int, sys.argv[5:6]))
