"""The public surface of tally.actors changes only on purpose."""

import tally.actors

EXPECTED = {
    "Actor",
    "ActorContext",
    "ActorError",
    "ActorRun",
    "ActorStopped",
    "Backoff",
    "Budget",
    "BudgetExceeded",
    "CallTimeout",
    "ChildSpec",
    "ChildStatistics",
    "Intensity",
    "Mailbox",
    "MailboxStatistics",
    "Resource",
    "Restart",
    "Supervisor",
    "SupervisorGaveUp",
    "SupervisorState",
    "SupervisorStatistics",
}


def test_public_names() -> None:
    assert set(tally.actors.__all__) == EXPECTED
    for name in EXPECTED - {"ActorRun"}:  # ActorRun is a type alias
        assert getattr(tally.actors, name).__module__.startswith("tally.actors.")
