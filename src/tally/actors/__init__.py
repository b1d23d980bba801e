"""The actor runtime: actors with bounded mailboxes, call/reply, supervision, budgets.

anyio only, so it runs on asyncio (production) and trio (tests run on both); no domain code. Read
``_supervisor`` for the restart and shutdown rules, ``_actor`` for send/call semantics, ``_mailbox``
for the close rules and ``_budget`` for deadlines that say where they hit.
"""

from ._actor import Actor as Actor
from ._budget import Budget as Budget
from ._errors import ActorError as ActorError
from ._errors import ActorStopped as ActorStopped
from ._errors import BudgetExceeded as BudgetExceeded
from ._errors import CallTimeout as CallTimeout
from ._errors import SupervisorGaveUp as SupervisorGaveUp
from ._mailbox import Mailbox as Mailbox
from ._mailbox import MailboxStatistics as MailboxStatistics
from ._resource import Resource as Resource
from ._supervisor import ActorContext as ActorContext
from ._supervisor import ActorRun as ActorRun
from ._supervisor import Backoff as Backoff
from ._supervisor import ChildSpec as ChildSpec
from ._supervisor import ChildStatistics as ChildStatistics
from ._supervisor import Intensity as Intensity
from ._supervisor import Restart as Restart
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorState as SupervisorState
from ._supervisor import SupervisorStatistics as SupervisorStatistics

__all__ = [
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
]
