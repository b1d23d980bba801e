"""The HTTP front end: the Reporting API app (routes, problem+json errors, OpenAPI, auth) and serving it."""

from ._app import create_reporting_app as create_reporting_app
from ._health import CheckResult as CheckResult
from ._health import Readiness as Readiness
from ._health import ReadinessCheck as ReadinessCheck
from ._health import health_blueprint as health_blueprint
from ._keystone import KeystoneTokens as KeystoneTokens
from ._keystone import keystone_tokens as keystone_tokens
from ._policy import PolicyFileError as PolicyFileError
from ._policy import TallyPolicy as TallyPolicy
from ._problems import Problem as Problem
from ._services import ReportingServices as ReportingServices
from ._serving import listen_socket as listen_socket
from ._serving import serve_quart as serve_quart
from ._sync_runner import SyncAlreadyRunning as SyncAlreadyRunning
from ._sync_runner import SyncNotStarted as SyncNotStarted
from ._sync_runner import SyncOutcome as SyncOutcome
from ._sync_runner import SyncRunner as SyncRunner
from ._sync_runner import UnknownCloud as UnknownCloud

__all__ = [
    "CheckResult",
    "KeystoneTokens",
    "PolicyFileError",
    "Problem",
    "Readiness",
    "ReadinessCheck",
    "ReportingServices",
    "SyncAlreadyRunning",
    "SyncNotStarted",
    "SyncOutcome",
    "SyncRunner",
    "TallyPolicy",
    "UnknownCloud",
    "create_reporting_app",
    "health_blueprint",
    "keystone_tokens",
    "listen_socket",
    "serve_quart",
]
