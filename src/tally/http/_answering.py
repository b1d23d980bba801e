"""What every answer of the Reporting API shares, whether Quart or the lean lane serves it.

The request id kept or made, the problem document's bytes, the answer to a database that does not
answer, and the two log lines of a failed request (their logger is the app's, so an operator greps
one name whichever path answered).
"""

from __future__ import annotations

import logging
import re
import uuid

import orjson

from tally.store import StoreUnavailable

from ._problems import Problem

log = logging.getLogger("tally.http._app")

REQUEST_ID = "X-Request-ID"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,200}")
STORE_UNAVAILABLE = "the database does not answer; nothing of this request was stored: try again"
RETRY_AFTER_S = 5


def request_id_of(given: str) -> str:
    """The caller's ``X-Request-ID`` when it is sane, else a new one."""
    return given if _SANE_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def problem_body(problem: Problem) -> bytes:
    return orjson.dumps(problem.to_json())


def unavailable_problem() -> Problem:
    """A restart, a failover, no connection within the pool's wait: the client should try again."""
    return Problem("unavailable", STORE_UNAVAILABLE, headers={"Retry-After": str(RETRY_AFTER_S)})


def log_store_unavailable(request_id: str, method: str, path: str, exc: StoreUnavailable) -> None:
    # One line, not a traceback: nothing of the request's transaction was committed.
    log.warning("store unavailable request_id=%s method=%s path=%s error=%s", request_id, method, path, exc)


def log_unexpected(request_id: str, method: str, path: str, exc: BaseException) -> None:
    log.error("unhandled error request_id=%s method=%s path=%s", request_id, method, path, exc_info=exc)
