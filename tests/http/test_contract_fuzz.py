"""schemathesis over /openapi.json of a live server: the document and the server agree.

Every operation is fuzzed with schema-valid requests (none may be refused: ST202)
and with schema-violating ones (none may be accepted: ST201), each sent with the
secret its route takes (tests/http/schemathesis.toml), so generated inputs reach
the handlers and the store; no answer may be a 5xx or fall outside the document.
The few refusals the document cannot express are allowed per operation in that
file, each with its reason.

CI size: ``TALLY_FUZZ_EXAMPLES`` (default 5) cases per operation and mode; the full
run of docs/reporting-api.md sets it to 200.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import schemathesis
from fuzz_formats import register_cursor_formats
from http_support import ADMIN, INGEST, INTERNAL, live_server
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from tally.http._cursor import KEY_NAME
from tally.store import open_store

EXAMPLES = int(os.environ.get("TALLY_FUZZ_EXAMPLES", "5"))
CONFIG = Path(__file__).with_name("schemathesis.toml")
SENT: Counter[str] = Counter()


def no_server_error(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool:
    """Like schemathesis' not_a_server_error, with the body of the answer in the message."""
    SENT[f"{case.meta.generation.mode if case.meta else '?'} {response.status_code}"] += 1
    if response.status_code >= 500:
        raise AssertionError(f"server error {response.status_code}: {response.text[:500]}")
    return True


CHECKS = [
    no_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
    negative_data_rejection,
]


async def _cursor_key(url: str) -> bytes:
    async with open_store(url) as store:
        return await store.shared_secret(KEY_NAME)


@pytest.fixture
def live_schema(store_url: str) -> Iterator[schemathesis.BaseSchema]:
    with live_server(store_url, reporting_sync_allow_at=True) as server:
        register_cursor_formats(anyio.run(_cursor_key, store_url))
        yield schemathesis.openapi.from_url(
            f"{server.base_url}/openapi.json", config=SchemathesisConfig.from_path(CONFIG)
        )


def secret_for(path: str, method: str) -> str:
    """The secret of the route (the CLI run takes them from schemathesis.toml)."""
    if path.startswith("/internal/"):
        return INTERNAL
    if path == "/api/v1/events" and method == "POST":
        return INGEST
    return ADMIN


def exercise(operation: schemathesis.APIOperation, mode: GenerationMode) -> None:
    headers = {"Authorization": f"Bearer {secret_for(operation.path, operation.method.upper())}"}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()


def test_the_document_and_the_server_agree(live_schema: schemathesis.BaseSchema) -> None:
    failures: list[str] = []
    operations = 0
    SENT.clear()
    for result in live_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                exercise(operation, mode)
            except Unsatisfiable:
                # No request of this operation violates its document (no parameter, no body).
                assert mode is GenerationMode.NEGATIVE, f"{operation.path}: no valid request exists"
            except Exception as exc:  # collect every operation's failure, then report them together
                failures.append(f"{operation.method.upper()} {operation.path} ({mode}): {exc}")
    answers = dict(sorted(SENT.items()))
    print(f"schemathesis: {operations} operations, {sum(SENT.values())} cases, answers {answers}")
    assert operations >= 26
    assert sum(SENT.values()) >= operations * 2
    assert not failures, "\n\n".join(failures)
