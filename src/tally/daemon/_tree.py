"""The actor tree: which actors ``tally run`` starts for the settings, in start order.

This is the one place where capabilities are composed. To add an actor, append its ``ChildSpec``
(``Actor(...).child()`` for a mailbox actor, or ``ChildSpec(name, run)`` for a service) to the list
*before* the HTTP front end, conditioned on the settings that enable it, and register its readiness
check with ``readiness.register(name, check)`` if ``/readyz`` should wait for it. Children start in
list order (each once the previous said it is ready) and stop in reverse, so something many actors
share (the store) goes first as a ``tally.actors.Resource`` and the actors after it read
``resource.value``.
"""

from __future__ import annotations

from quart import Quart

from tally.actors import ChildSpec
from tally.config import Settings
from tally.http import Readiness, health_blueprint

from ._frontend import http_front_end


def build_tree(settings: Settings, readiness: Readiness) -> list[ChildSpec]:
    """The supervisor's children for ``settings``, in start order."""
    app = Quart("tally")
    app.register_blueprint(health_blueprint(readiness, metrics_enabled=settings.metrics_enabled))
    return [
        http_front_end(
            app,
            settings.reporting_http_addr,
            settings.reporting_http_port,
            graceful_timeout_s=min(5.0, settings.shutdown_grace_s),
        ),
    ]
