"""Budget: run work under a deadline and say, when it hits, what the work was doing.

    with Budget(45) as budget:
        budget.doing("enumerating servers")
        servers = await list_servers()
        budget.doing("comparing with the store")
        ...

When the deadline passes, the work inside is cancelled (a cancel scope, so every await in it stops at
once) and ``BudgetExceeded`` is raised with the last step named, e.g. "budget of 45s exceeded while
enumerating servers". A sync run records that text as its error, which tells an operator whether the
cloud was slow to list or our side was slow to book.

Why a class and not ``@contextmanager``: the caller needs the object inside the block to mark steps,
and the exit must tell the deadline apart from a cancellation coming from outside, which is not ours
to translate.
"""

from __future__ import annotations

from types import TracebackType

import anyio

from ._errors import BudgetExceeded


class Budget:
    """A deadline ``seconds`` from when the ``with`` block is entered; see the module docstring."""

    def __init__(self, seconds: float, *, doing: str = "starting") -> None:
        if seconds <= 0:
            raise ValueError(f"a budget must be positive, got {seconds:g}s")
        self.seconds = seconds
        self._doing = doing
        self._scope: anyio.CancelScope | None = None
        self._started_at = 0.0

    def doing(self, step: str) -> None:
        """Mark the step the work is on; it is the text of ``BudgetExceeded`` if the deadline hits now."""
        self._doing = step

    @property
    def current_step(self) -> str:
        return self._doing

    def elapsed(self) -> float:
        """Seconds since the block was entered."""
        return anyio.current_time() - self._started_at

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.seconds - self.elapsed())

    def __enter__(self) -> Budget:
        if self._scope is not None:
            raise RuntimeError("a Budget can be entered only once")
        self._started_at = anyio.current_time()
        self._scope = anyio.CancelScope(deadline=self._started_at + self.seconds)
        self._scope.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._scope is not None
        swallowed = self._scope.__exit__(exc_type, exc, tb)
        if self._scope.cancelled_caught and anyio.current_time() >= self._scope.deadline:
            raise BudgetExceeded(self.seconds, self._doing)
        return bool(swallowed)
