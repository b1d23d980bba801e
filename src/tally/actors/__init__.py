"""The actor runtime: bounded mailboxes, requests with a one-shot reply, supervision, budgets.

anyio only, so it runs on asyncio (production) and trio (tests run on both); no domain code. Read
``_supervisor`` for the restart and shutdown rules, ``_mailbox`` for the close rules, ``_request``
for ask/answer and withdrawal, ``_serve`` for an actor's loop over its requests, and ``_budget``
for deadlines that say where they hit.
"""

from ._budget import Budget as Budget
from ._errors import ActorStopped as ActorStopped
from ._errors import BudgetExceeded as BudgetExceeded
from ._errors import SupervisorGaveUp as SupervisorGaveUp
from ._mailbox import Mailbox as Mailbox
from ._request import Request as Request
from ._request import ask as ask
from ._resource import HeldResource as HeldResource
from ._serve import serve_requests as serve_requests
from ._supervisor import ActorContext as ActorContext
from ._supervisor import ChildSpec as ChildSpec
from ._supervisor import Intensity as Intensity
from ._supervisor import Supervisor as Supervisor

__all__ = [
    "ActorContext",
    "ActorStopped",
    "Budget",
    "BudgetExceeded",
    "ChildSpec",
    "HeldResource",
    "Intensity",
    "Mailbox",
    "Request",
    "Supervisor",
    "SupervisorGaveUp",
    "ask",
    "serve_requests",
]
