"""The HTTP front end: the Reporting API app (routes, problem+json errors, OpenAPI, auth) and serving it."""

from ._app import create_reporting_app as create_reporting_app
from ._keystone import keystone_tokens as keystone_tokens
from ._policy import PolicyFileError as PolicyFileError
from ._policy import sample_yaml as sample_yaml
from ._probes import CheckResult as CheckResult
from ._probes import Readiness as Readiness
from ._probes import health_blueprint as health_blueprint
from ._services import ReportingServices as ReportingServices
from ._serving import listen_socket as listen_socket
from ._serving import serve_quart as serve_quart
from ._sync_runner import SyncRunner as SyncRunner

__all__ = [
    "CheckResult",
    "PolicyFileError",
    "Readiness",
    "ReportingServices",
    "SyncRunner",
    "create_reporting_app",
    "health_blueprint",
    "keystone_tokens",
    "listen_socket",
    "sample_yaml",
    "serve_quart",
]
