"""schemathesis over /openapi.json of a live server: no 5xx and no answer outside the document.

Short mode: a handful of generated requests per operation, each sent with the
secret its route takes, so generated inputs reach the handlers (and the store)
instead of stopping at a 401.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from http_support import ADMIN, INGEST, INTERNAL, live_server
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)


def no_server_error(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool:
    """Like schemathesis' not_a_server_error, with the body of the answer in the message."""
    if response.status_code >= 500:
        raise AssertionError(f"server error {response.status_code}: {response.text[:500]}")
    return True


CHECKS = [no_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def live_schema(store_url: str) -> Iterator[schemathesis.BaseSchema]:
    with live_server(store_url, reporting_sync_allow_at=True) as server:
        yield schemathesis.openapi.from_url(f"{server.base_url}/openapi.json")


def secret_for(path: str, method: str) -> str:
    if path.startswith("/internal/"):
        return INTERNAL
    if path == "/api/v1/events" and method == "POST":
        return INGEST
    return ADMIN


def exercise(operation: schemathesis.APIOperation) -> None:
    headers = {"Authorization": f"Bearer {secret_for(operation.path, operation.method.upper())}"}

    @given(case=operation.as_strategy())
    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()


def test_no_server_error_and_answers_match_the_document(live_schema: schemathesis.BaseSchema) -> None:
    failures: list[str] = []
    operations = 0
    for result in live_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        try:
            exercise(operation)
        except Exception as exc:  # collect every operation's failure, then report them together
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert operations >= 23
    assert not failures, "\n\n".join(failures)
