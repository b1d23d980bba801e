"""Starting the private RabbitMQ nodes of ``tally.testing.rabbit_node`` from a test: side by side,
and skipped when ``rabbitmq-server`` is not installed."""

from __future__ import annotations

import threading

import pytest

from tally.testing.rabbit_node import BrokerNode, RabbitNodeUnavailable


def start_nodes(*nodes: BrokerNode) -> None:
    """Start every node, in parallel (each takes several seconds of mostly waiting); skip the test
    when the broker is not installed. A node that fails to start is stopped with the others."""
    errors: list[BaseException] = []

    def start(node: BrokerNode) -> None:
        try:
            node.start()
        except BaseException as exc:  # kept for the caller's thread, which raises it
            errors.append(exc)

    starters = [threading.Thread(target=start, args=(node,)) for node in nodes]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    if errors:
        for node in nodes:
            node.stop()
        if isinstance(errors[0], RabbitNodeUnavailable):
            pytest.skip(str(errors[0]))
        raise errors[0]
