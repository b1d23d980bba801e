"""The public surface of tally.http that the daemon and the reconciliation build on."""

from __future__ import annotations

import tally.http


def test_reporting_api_names_are_exported() -> None:
    expected = {
        "ReportingServices",
        "SyncRunner",
        "create_reporting_app",
    }
    assert expected <= set(tally.http.__all__)
    assert all(getattr(tally.http, name) is not None for name in expected)
