"""HeldResource: a child that holds something open (a store, a connection pool) for the actors after it.

Children start in order and stop in reverse, so a resource listed before its users is open before
any of them starts and closed only after all of them stopped::

    store = HeldResource("store", lambda: open_store(settings.store_url))
    children = [store.child(), scheduler_child(lambda: store.value), http_front_end(...)]

``value`` raises ``RuntimeError`` outside that window, so a use before open or after close is loud.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

from ._supervisor import ActorContext, ChildSpec, Restart

T = TypeVar("T")


class HeldResource(Generic[T]):
    """Opens ``open_()`` when its child starts, exposes it as ``value``, closes it when told to stop."""

    def __init__(
        self,
        name: str,
        open_: Callable[[], AbstractAsyncContextManager[T]],
        *,
        restart: Restart = Restart.PERMANENT,
    ) -> None:
        self.name = name
        self.restart = restart
        self._open = open_
        self._value: T | None = None
        self._is_open = False

    @property
    def value(self) -> T:
        if not self._is_open:
            raise RuntimeError(f"resource {self.name!r} is not open")
        return self._value  # type: ignore[return-value]  # set whenever _is_open

    def child(self) -> ChildSpec:
        return ChildSpec(self.name, self._run, self.restart)

    async def _run(self, ctx: ActorContext) -> None:
        async with self._open() as value:
            self._value, self._is_open = value, True
            try:
                ctx.started()
                await ctx.wait_stopping()
            finally:
                self._value, self._is_open = None, False
