"""The cursor formats of the Reporting API document, for schemathesis: sealed cursors of each listing.

A ``cursor`` parameter is valid only as a ``next_cursor`` the server answered
(``format: tally-cursor-<listing>``), so a generator of valid requests must
draw cursors the deployment sealed: any sort key, sealed with the store's key.
Used by tests/http/test_contract_fuzz.py, and as a schemathesis hooks module
(``SCHEMATHESIS_HOOKS=fuzz_formats``, the key in ``TALLY_FUZZ_CURSOR_KEY`` as hex)
by the full run.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import schemathesis
from hypothesis import strategies as st

from tally.core import ResourceKey
from tally.http._cursor import CursorSeal

_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40)
_STAMP = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))


def register_cursor_formats(key: bytes) -> None:
    seal = CursorSeal(key)
    schemathesis.openapi.format(
        "tally-cursor-events", st.tuples(_STAMP, _TEXT).map(lambda k: seal.encode_time_key("events", k))
    )
    # A dead letter's id is a UUID, as in every cursor the listing answers.
    schemathesis.openapi.format(
        "tally-cursor-rejected",
        st.tuples(_STAMP, st.uuids().map(str)).map(lambda k: seal.encode_time_key("rejected", k)),
    )
    schemathesis.openapi.format(
        "tally-cursor-resources",
        st.builds(ResourceKey, _TEXT, _TEXT, _TEXT).map(seal.encode_resource_key),
    )
    # A usage page without group_by pages by resource key (with group_by, by group: not drawn here).
    schemathesis.openapi.format(
        "tally-cursor-usage", st.builds(ResourceKey, _TEXT, _TEXT, _TEXT).map(seal.encode_resource_key)
    )
    schemathesis.openapi.format(
        "tally-cursor-projects", st.uuids().map(lambda u: seal.encode_id_key("projects", str(u)))
    )


if os.environ.get("TALLY_FUZZ_CURSOR_KEY"):
    register_cursor_formats(bytes.fromhex(os.environ["TALLY_FUZZ_CURSOR_KEY"]))
