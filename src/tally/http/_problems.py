"""RFC 9457 problem documents: the one shape of every error the Reporting API answers.

A handler raises ``Problem``; the app turns it (and Quart's own HTTP errors,
and anything unexpected) into ``application/problem+json``. The ``type`` URNs
and titles are the contract of the reference API, so clients can branch on
``type`` without parsing ``detail``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROBLEM_CONTENT_TYPE = "application/problem+json"

# kind -> (default status, title)
KINDS: Mapping[str, tuple[int, str]] = {
    "validation": (400, "Validation failed"),
    "unauthorized": (401, "Unauthorized"),
    "forbidden": (403, "Forbidden"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "not_acceptable": (406, "Not acceptable"),
    "conflict": (409, "Conflict"),
    "payload_too_large": (413, "Payload too large"),
    "history_too_long": (422, "History too long"),
    "result_too_large": (422, "Result too large"),
    "relation_cycle": (422, "Relation cycle"),
    "internal": (500, "Internal server error"),
    "not_implemented": (501, "Not implemented"),
    "unavailable": (503, "Service unavailable"),
}

CONTRACT_MISMATCH = "the request does not match the API contract"


def error_type(kind: str) -> str:
    return f"urn:tally:error:{kind}"


class Problem(Exception):
    """An error answer: ``kind`` picks type and title; ``errors`` name members as ``{loc, msg}``."""

    def __init__(
        self,
        kind: str,
        detail: str | None = None,
        *,
        status: int | None = None,
        errors: Sequence[Mapping[str, str]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown problem kind {kind!r}")
        super().__init__(detail or kind)
        self.kind = kind
        self.status = status if status is not None else KINDS[kind][0]
        self.detail = detail
        self.errors = [dict(e) for e in errors]
        self.headers = dict(headers or {})

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": error_type(self.kind),
            "title": KINDS[self.kind][1],
            "status": self.status,
        }
        if self.detail is not None:
            body["detail"] = self.detail
        if self.errors:
            body["errors"] = self.errors
        return body


def invalid(loc: str, msg: str, *, status: int = 400) -> Problem:
    """A validation problem about one member (``loc`` like ``body.at`` or ``query.limit``)."""
    return Problem("validation", CONTRACT_MISMATCH, status=status, errors=[{"loc": loc, "msg": msg}])
