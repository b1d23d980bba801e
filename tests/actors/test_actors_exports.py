"""The public surface of tally.actors changes only on purpose."""

import tally.actors

EXPECTED = {
    "ActorContext",
    "ActorStopped",
    "Budget",
    "BudgetExceeded",
    "ChildSpec",
    "Mailbox",
    "Request",
    "HeldResource",
    "Intensity",
    "Supervisor",
    "SupervisorGaveUp",
    "ask",
    "serve_requests",
}


def test_public_names() -> None:
    assert set(tally.actors.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(tally.actors, name).__module__.startswith("tally.actors.")
