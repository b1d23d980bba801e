"""A test's own exchange on the machine's RabbitMQ, for a daemon's collector to bind: declared before
the daemon starts, removed with the collector's queue after."""

from __future__ import annotations

import aio_pika


async def declare(url: str, exchange: str) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)


async def clean_up(url: str, exchange: str, queue: str) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        await channel.queue_delete(queue)
        await channel.exchange_delete(exchange)
