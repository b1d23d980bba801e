"""The runtime's exceptions, one per failure a caller can act on.

    ActorError
    ├── ActorStopped        the actor's mailbox is closed: it takes no more messages
    ├── BudgetExceeded      work ran past its budget; says what it was doing (also a TimeoutError)
    └── SupervisorGaveUp    restarts exceeded the intensity limit; the process should exit non-zero

Cancellation is never translated into one of these: a cancelled caller sees its own cancellation.
"""

from __future__ import annotations


class ActorError(Exception):
    """Base of every error raised by ``tally.actors``."""


class ActorStopped(ActorError):
    """The actor's mailbox was closed, so the message cannot be delivered."""

    def __init__(self, actor: str) -> None:
        super().__init__(f"actor {actor!r} is stopped and takes no more messages")
        self.actor = actor


class BudgetExceeded(ActorError, TimeoutError):
    """Work ran past its budget; ``doing`` is the step it was on when the deadline hit."""

    def __init__(self, budget_s: float, doing: str) -> None:
        super().__init__(f"budget of {budget_s:g}s exceeded while {doing}")
        self.budget_s = budget_s
        self.doing = doing


class SupervisorGaveUp(ActorError):
    """More than ``max_restarts`` restarts happened within ``within_s``: the supervisor stopped its tree."""

    def __init__(
        self, supervisor: str, actor: str, max_restarts: int, within_s: float, last_error: str = ""
    ) -> None:
        super().__init__(
            f"supervisor {supervisor!r} gave up: actor {actor!r} crashed again after "
            f"{max_restarts} restarts within {within_s:g}s"
            + (f"; last error: {last_error}" if last_error else "")
        )
        self.last_error = last_error
        self.supervisor = supervisor
        self.actor = actor
        self.max_restarts = max_restarts
        self.within_s = within_s
