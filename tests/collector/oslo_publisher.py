"""A service publishing through oslo.messaging's own Notifier, as nova does: run as a process of its own.

    python oslo_publisher.py URL EXCHANGE COUNT RATE [START]

Publishes COUNT ``compute.instance.create.end`` notifications (instance ``vm-START`` on) on the
topic exchange EXCHANGE, with OpenStack's defaults (``messagingv2``, topic ``notifications``,
``amqp_durable_queues = false``), at about RATE per second, retrying forever through broker
outages as the services do (``retry=-1``). Prints ``published N`` when done.
"""

from __future__ import annotations

import sys
import time

import oslo_messaging
from collector_support import instance_payload
from oslo_config import cfg


def main(url: str, exchange: str, count: int, rate: float, start: int = 0) -> None:
    conf = cfg.ConfigOpts()
    conf([], project="tally-test")
    oslo_messaging.set_transport_defaults(control_exchange=exchange)
    transport = oslo_messaging.get_notification_transport(conf, url=url)
    notifier = oslo_messaging.Notifier(
        transport, publisher_id="compute.test-host", driver="messagingv2", topics=["notifications"], retry=-1
    )
    began = time.monotonic()
    for n in range(start, start + count):
        payload = instance_payload(f"vm-{n}", "tenant-1")
        notifier.info({"project_id": "tenant-1"}, "compute.instance.create.end", payload)
        ahead = began + (n - start + 1) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    transport.cleanup()
    print(f"published {count}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), *map(int, sys.argv[5:6]))
