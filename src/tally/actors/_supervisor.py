"""Supervisor: runs child actors in one task group, restarts them, and stops them in order.

The rules follow Erlang/OTP's supervisor principles:

- Children start one after another in the given order; child N+1 starts only once child N said it is
  ready (``ctx.started()``, or returned), so a later actor may rely on an earlier one.
- A child that crashes (raises) is restarted according to its ``Restart`` policy after an exponential
  backoff with jitter, so a failing dependency is not hammered in lockstep by every replica.
- Intensity: more than ``max_restarts`` restarts within ``within_s`` seconds means restarting does not
  help. The supervisor then stops the whole tree and raises ``SupervisorGaveUp``; the daemon exits
  non-zero so systemd or the container runtime restarts the process with a clean slate.
- Shutdown runs in reverse start order. Each child is told to stop (``ctx.stopping``) and given what is
  left of one shared grace period; a child still running at the end of the grace is cancelled. The
  grace is shared, not per child, so the whole shutdown fits in the time the operator configured.
"""

from __future__ import annotations

import enum
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskStatus

from ._errors import SupervisorGaveUp
from ._metrics import ACTOR_RESTARTS

log = logging.getLogger(__name__)


class Restart(enum.Enum):
    """When a child that ended is started again."""

    PERMANENT = "permanent"
    """Always restarted, even after a normal return: a service that should never end."""
    TRANSIENT = "transient"
    """Restarted only after a crash; a normal return means its job is done."""
    TEMPORARY = "temporary"
    """Never restarted: a crash is logged and the child stays down."""


@dataclass(frozen=True)
class Backoff:
    """Delay before restart number ``attempt`` (1-based) of a child: exponential, capped, jittered."""

    initial_s: float = 0.1
    max_s: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.1
    """Fraction of the delay drawn at random either way, so replicas do not restart in lockstep."""
    reset_after_s: float = 60.0
    """A child that ran at least this long before crashing starts again from ``initial_s``."""

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.max_s, self.initial_s * self.multiplier ** max(0, attempt - 1))
        return max(0.0, base * (1.0 + rng.uniform(-self.jitter, self.jitter)))


@dataclass(frozen=True)
class Intensity:
    """At most ``max_restarts`` restarts within ``within_s`` seconds, across all children."""

    max_restarts: int = 5
    within_s: float = 60.0


class ActorContext:
    """What a running actor gets from its supervisor: its name, a ready signal and a stop request."""

    def __init__(self, name: str, stopping: anyio.Event, on_started: Callable[[], None]) -> None:
        self.name = name
        self._stopping = stopping
        self._on_started = on_started

    def started(self) -> None:
        """Say the actor is ready (socket listening, connection open); the next child then starts."""
        self._on_started()

    @property
    def stopping(self) -> bool:
        """True once the supervisor asked this actor to finish its work and return."""
        return self._stopping.is_set()

    async def wait_stopping(self) -> None:
        """Return when the supervisor asks this actor to stop."""
        await self._stopping.wait()


ActorRun = Callable[[ActorContext], Awaitable[None]]


@dataclass(frozen=True)
class ChildSpec:
    """One supervised actor: its unique name, the coroutine function that runs it, its restart policy."""

    name: str
    run: ActorRun
    restart: Restart = Restart.PERMANENT


class SupervisorState(enum.Enum):
    NEW = "new"
    """Created; ``run`` not called yet."""
    STARTING = "starting"
    """Starting children in order."""
    RUNNING = "running"
    """Every child started; restarts happen here."""
    STOPPING = "stopping"
    """Stopping children in reverse order within the grace period."""
    STOPPED = "stopped"
    """Every child has ended; ``run`` returned or raised."""


@dataclass(frozen=True)
class ChildStatistics:
    name: str
    running: bool
    """True while an incarnation of the child is running (not in backoff, not ended)."""
    restarts: int
    """Restarts since the supervisor started."""


@dataclass(frozen=True)
class SupervisorStatistics:
    state: SupervisorState
    children: tuple[ChildStatistics, ...]


@dataclass(eq=False)
class _Child:
    spec: ChildSpec
    stopping: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    running: bool = False
    restarts: int = 0


class Supervisor:
    """Runs ``children`` in one task group; see the module docstring for the rules."""

    def __init__(
        self,
        children: Sequence[ChildSpec],
        *,
        name: str = "root",
        intensity: Intensity = Intensity(),
        backoff: Backoff = Backoff(),
        shutdown_grace_s: float = 10.0,
        rng: random.Random | None = None,
    ) -> None:
        names = [c.name for c in children]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"supervisor {name!r}: duplicate child names {duplicates}")
        self.name = name
        self.intensity = intensity
        self.backoff = backoff
        self.shutdown_grace_s = shutdown_grace_s
        self._rng = rng or random.Random()
        self._children = [_Child(spec) for spec in children]
        self._state = SupervisorState.NEW
        self._stop_requested = anyio.Event()
        self._restart_times: deque[float] = deque()
        self._gave_up: SupervisorGaveUp | None = None
        self._starting: _Child | None = None

    @property
    def ready(self) -> bool:
        """True while every child has started and no shutdown has begun."""
        return self._state is SupervisorState.RUNNING

    def stop(self) -> None:
        """Ask for a graceful shutdown; ``run`` returns once every child has ended."""
        self._stop_requested.set()
        if self._starting is not None:
            # The child being started is told too, or the start would wait on it forever.
            self._starting.stopping.set()

    def statistics(self) -> SupervisorStatistics:
        return SupervisorStatistics(
            state=self._state,
            children=tuple(ChildStatistics(c.spec.name, c.running, c.restarts) for c in self._children),
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the children in order, supervise them until ``stop()``, then stop them in reverse.

        Calls ``task_status.started()`` once every child has started. Raises ``SupervisorGaveUp`` after
        the tree was stopped because the restart intensity was exceeded.
        """
        if self._state is not SupervisorState.NEW:
            raise RuntimeError(f"supervisor {self.name!r} is {self._state.value}; a supervisor runs once")
        self._state = SupervisorState.STARTING
        for child in self._children:
            ACTOR_RESTARTS.labels(actor=child.spec.name)  # the series exists at zero from the start
        started: list[_Child] = []
        try:
            async with anyio.create_task_group() as tg:
                for child in self._children:
                    if self._stop_requested.is_set():
                        break
                    self._starting = child
                    await tg.start(self._supervise, child)
                    self._starting = None
                    started.append(child)
                    log.info("actor started supervisor=%s actor=%s", self.name, child.spec.name)
                if not self._stop_requested.is_set():
                    self._state = SupervisorState.RUNNING
                    log.info("supervisor running supervisor=%s children=%d", self.name, len(started))
                task_status.started()
                await self._stop_requested.wait()
                self._state = SupervisorState.STOPPING
                await self._stop_in_reverse(started)
        finally:
            self._state = SupervisorState.STOPPED
        if self._gave_up is not None:
            raise self._gave_up
        log.info("supervisor stopped supervisor=%s", self.name)

    async def _stop_in_reverse(self, started: list[_Child]) -> None:
        deadline = anyio.current_time() + self.shutdown_grace_s
        log.info("supervisor stopping supervisor=%s grace_s=%g", self.name, self.shutdown_grace_s)
        for child in reversed(started):
            child.stopping.set()
            with anyio.CancelScope(deadline=deadline):
                await child.done.wait()
            if not child.done.is_set():
                log.warning("actor cancelled at end of grace actor=%s", child.spec.name)
                child.scope.cancel()
                await child.done.wait()
            log.info("actor stopped supervisor=%s actor=%s", self.name, child.spec.name)

    async def _supervise(self, child: _Child, *, task_status: TaskStatus[None]) -> None:
        reported = False

        def report_started() -> None:
            nonlocal reported
            if not reported:
                reported = True
                task_status.started()

        name = child.spec.name
        attempt = 0
        try:
            with child.scope:
                while True:
                    began = anyio.current_time()
                    crash: Exception | None = None
                    child.running = True
                    try:
                        await child.spec.run(ActorContext(name, child.stopping, report_started))
                    except Exception as exc:
                        crash = exc
                        log.error("actor crashed actor=%s error=%r", name, exc, exc_info=exc)
                    finally:
                        child.running = False
                    if crash is None and not child.stopping.is_set():
                        log.info("actor returned actor=%s", name)
                    if self._stop_requested.is_set() or child.stopping.is_set():
                        break  # no restarts once the tree is shutting down
                    if not self._should_restart(child.spec.restart, crash):
                        break
                    if anyio.current_time() - began >= self.backoff.reset_after_s:
                        attempt = 0
                    attempt += 1
                    if not self._admit_restart():
                        self._give_up(name, crash)
                        self.stop()
                        break
                    delay = self.backoff.delay(attempt, self._rng)
                    log.warning("actor restarting actor=%s attempt=%d delay_s=%.3f", name, attempt, delay)
                    with anyio.move_on_after(delay):
                        await self._stop_requested.wait()
                    if self._stop_requested.is_set():
                        break
                    child.restarts += 1
                    ACTOR_RESTARTS.labels(actor=name).inc()
            report_started()
        finally:
            child.done.set()

    @staticmethod
    def _should_restart(policy: Restart, crash: Exception | None) -> bool:
        if policy is Restart.PERMANENT:
            return True
        if policy is Restart.TRANSIENT:
            return crash is not None
        return False

    def _admit_restart(self) -> bool:
        now = anyio.current_time()
        self._restart_times.append(now)
        while self._restart_times and now - self._restart_times[0] > self.intensity.within_s:
            self._restart_times.popleft()
        return len(self._restart_times) <= self.intensity.max_restarts

    def _give_up(self, actor: str, crash: BaseException | None) -> None:
        last = _one_line(crash) if crash is not None else ""
        self._gave_up = SupervisorGaveUp(
            self.name, actor, self.intensity.max_restarts, self.intensity.within_s, last
        )
        log.error(
            "supervisor giving up supervisor=%s actor=%s max_restarts=%d within_s=%g last_error=%s",
            self.name,
            actor,
            self.intensity.max_restarts,
            self.intensity.within_s,
            last or "-",
        )


def _one_line(exc: BaseException) -> str:
    """The innermost error of ``exc`` (through exception groups) as one line: what an operator reads
    in the exit line, rather than a nested group ("disk full on PATH", not "unhandled errors ...")."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300]
