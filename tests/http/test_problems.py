"""Problem documents carry the type URNs and titles of the reference API."""

from __future__ import annotations

import pytest

from tally.http._problems import KINDS, Problem, invalid


def test_every_kind_has_its_urn_title_and_status() -> None:
    for kind, (status, title) in KINDS.items():
        body = Problem(kind).to_json()
        assert body == {"type": f"urn:tally:error:{kind}", "title": title, "status": status}


def test_validation_problem_names_the_member() -> None:
    body = invalid("body.at", "must be an RFC 3339 instant").to_json()
    assert body["title"] == "Validation failed"
    assert body["detail"] == "the request does not match the API contract"
    assert body["errors"] == [{"loc": "body.at", "msg": "must be an RFC 3339 instant"}]


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown problem kind"):
        Problem("teapot")
