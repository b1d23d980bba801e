"""The public surface of tally.reconcile and tally.openstack: a change here is a change on purpose."""

from __future__ import annotations

import subprocess
import sys

import tally.openstack
import tally.reconcile
import tally.reconcile.internals


def test_reconcile_exports() -> None:
    assert sorted(tally.reconcile.__all__) == sorted(
        [
            "AccountCheck",
            "DeletedResource",
            "IngestsEvents",
            "Observation",
            "ObserveRequest",
            "ObservedResource",
            "Progress",
            "RunAborted",
            "RunRequests",
            "RunSettings",
            "RunnerOutcome",
            "SchedulerRunner",
            "SizeNameEntry",
            "SizeNamesFailed",
            "Status",
            "SyncAlreadyRunning",
            "SyncNotStarted",
            "SyncService",
            "UnknownCloud",
            "adapter_class",
            "run_cloud_scheduler",
            "run_requests",
            "validate_adapter_config",
        ]
    )
    for name in tally.reconcile.__all__:
        assert hasattr(tally.reconcile, name)


def test_openstack_exports() -> None:
    assert sorted(tally.openstack.__all__) == sorted(
        [
            "KeystoneUnavailable",
            "OpenStackAdapter",
            "TokenChecker",
            "TokenInfo",
            "kept_connections",
            "resolve_cloud",
        ]
    )
    assert tally.reconcile.internals.ADAPTERS["openstack"] == "tally.openstack:OpenStackAdapter"
    assert tally.reconcile.adapter_class("openstack") is tally.openstack.OpenStackAdapter


def test_reconcile_does_not_import_the_layers_above_it() -> None:
    # ARCHITECTURE.md: http and daemon sit on top of reconcile; the arrows point one way.
    code = (
        "import sys, tally.reconcile, tally.openstack; "
        "print(sorted(m for m in sys.modules if m.startswith(('tally.http', 'tally.daemon'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_http_gives_no_reconciliation_type_a_second_name() -> None:
    # One name per type: the sync route's outcome and refusals are tally.reconcile's, imported from there.
    import tally.http

    reconciliation = {id(getattr(tally.reconcile, name)) for name in tally.reconcile.__all__}
    assert [n for n in tally.http.__all__ if id(getattr(tally.http, n)) in reconciliation] == []
    assert not hasattr(tally.http, "SyncOutcome")
