"""The RabbitMQ vhost a ``tally simulate`` run has to itself, and the removal of its queue.

A run through RabbitMQ must see only what it published: a delivery another publisher (a second run,
a ``tally simulator run``) sends to the same exchanges would become an event in this run's store and
fail the comparison for reasons of no concern to it. On a broker on loopback the run makes a vhost
of its own with ``rabbitmqctl add_vhost`` (the management plugin is not needed), grants the URL's
user on it, and deletes it at the end, which takes its exchanges and queue with it. ``rabbitmqctl``
reaches the local node only, so a broker elsewhere (``--allow-remote-broker``) is used on the vhost
its URL names, which the operator vouches is the run's own; the run then removes its queue itself.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import aio_pika
import anyio

from .publisher import PublishError, is_loopback_url, redact

log = logging.getLogger(__name__)


class VhostError(PublishError):
    """The run's own vhost could not be made or checked; the message says what to do."""


@dataclass(frozen=True)
class RunBroker:
    """Where a run publishes and consumes: the URL on its vhost, and whether the run made it."""

    url: str
    vhost: str
    own: bool


def url_vhost(url: str) -> str:
    """The vhost an AMQP URL names: its path, unquoted; ``/`` when the path is empty."""
    path = urlsplit(url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def with_vhost(url: str, vhost: str) -> str:
    """``url`` on ``vhost`` instead of the one it names."""
    return urlsplit(url)._replace(path="/" + quote(vhost, safe="")).geturl()


async def _rabbitmqctl(*args: str) -> None:
    binary = shutil.which("rabbitmqctl")
    if binary is None:
        raise VhostError(
            "rabbitmqctl is not on PATH: simulate makes a vhost of its own on the local RabbitMQ with it "
            "(run where the broker's tools are, as a user that may use them)"
        )
    result = await anyio.run_process([binary, "-q", *args], check=False)
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).decode(errors="replace").strip().splitlines()
        raise VhostError(
            f"rabbitmqctl {' '.join(args[:2])} failed (exit {result.returncode}): "
            f"{reason[-1] if reason else 'no output'}"
        )


async def _check_reachable(url: str) -> None:
    try:
        connection = await aio_pika.connect(url)
    except (OSError, aio_pika.exceptions.AMQPError) as exc:
        raise VhostError(
            f"the broker at {redact(url)} refuses the vhost rabbitmqctl made ({exc}): "
            "is rabbitmqctl talking to another node than the URL?"
        ) from exc
    await connection.close()


async def delete_queue(url: str, queue: str) -> None:
    """Delete ``queue`` on ``url``'s vhost; a queue already gone is fine."""
    try:
        connection = await aio_pika.connect(url)
        async with connection:
            channel = await connection.channel()
            await channel.queue_delete(queue)
    except (OSError, aio_pika.exceptions.AMQPError) as exc:
        log.warning("simulate queue not deleted broker=%s queue=%s error=%s", redact(url), queue, exc)


@asynccontextmanager
async def run_broker(url: str, *, queue: str) -> AsyncIterator[RunBroker]:
    """The broker of one run: a vhost of its own on a local broker, else the URL's vhost. On exit the
    queue is deleted, and the vhost too when the run made it (shielded: a cancelled run cleans up)."""
    if not is_loopback_url(url):
        broker = RunBroker(url, url_vhost(url), own=False)
    else:
        vhost = f"tally-simulate-{uuid.uuid4().hex[:12]}"
        user = unquote(urlsplit(url).username or "guest")
        await _rabbitmqctl("add_vhost", vhost)
        broker = RunBroker(with_vhost(url, vhost), vhost, own=True)
        try:
            await _rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
            await _check_reachable(broker.url)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _rabbitmqctl("delete_vhost", vhost)
            raise
    log.info("simulate broker=%s vhost=%s own=%s", redact(url), broker.vhost, broker.own)
    try:
        yield broker
    finally:
        with anyio.CancelScope(shield=True):
            await delete_queue(broker.url, queue)
            if broker.own:
                await _rabbitmqctl("delete_vhost", broker.vhost)
