"""The fake OpenStack cloud: keystone and the five listing APIs over a :class:`~tally.simulator.World`.

``create_fake_cloud_app(world, clock, faults)`` is a Quart app; the harness's ``serve_fake_cloud``
(``tally.simulation``) hosts it with the daemon's Hypercorn serving inside the caller's task group.
What each route answers, and why, is in docs/simulator-fake-cloud.md.
"""

from ._app import FakeCloudState as FakeCloudState
from ._app import create_fake_cloud_app as create_fake_cloud_app
from ._faults import ApiFaults as ApiFaults
from ._faults import FaultDocumentError as FaultDocumentError
from ._keystone import ADMIN_PASSWORD as ADMIN_PASSWORD
from ._keystone import ADMIN_PROJECT as ADMIN_PROJECT
from ._keystone import ADMIN_USER as ADMIN_USER
from ._keystone import MEMBER_PASSWORD as MEMBER_PASSWORD
from ._keystone import MEMBER_USER as MEMBER_USER
from ._keystone import READ_ONLY_RULES as READ_ONLY_RULES
from ._keystone import Accounts as Accounts
from ._keystone import admin_cloud_entry as admin_cloud_entry
