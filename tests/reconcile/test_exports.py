"""The public surface of tally.reconcile and tally.openstack: a change here is a change on purpose."""

from __future__ import annotations

import subprocess
import sys

import tally.openstack
import tally.reconcile


def test_reconcile_exports() -> None:
    assert sorted(tally.reconcile.__all__) == sorted(
        [
            "ADAPTERS",
            "BATCH_SIZE",
            "AccountCheck",
            "Adapter",
            "CloudHealth",
            "CloudsReadiness",
            "Correction",
            "DeletedResource",
            "DeletedWindow",
            "Deferral",
            "EarlierRun",
            "Kind",
            "Observation",
            "ObserveRequest",
            "ObservedResource",
            "Plan",
            "Progress",
            "Reason",
            "RunAborted",
            "RunSettings",
            "RunStats",
            "RunnerOutcome",
            "SizeNameEntry",
            "SizeNamesFailed",
            "Status",
            "SyncAlreadyRunning",
            "SyncError",
            "SyncNotStarted",
            "SyncOutcome",
            "SyncService",
            "UnknownCloud",
            "absence_delete_instant",
            "adapter_class",
            "cap_errors",
            "create_instant",
            "create_missing_from_history",
            "deferral_of_absence_delete",
            "deferral_of_create",
            "deferral_of_reported_delete",
            "deferral_of_update",
            "deferral_of_whole_life",
            "delete_is_skipped",
            "deleted_servers_window",
            "default_max_concurrent",
            "diff",
            "drift",
            "event_of",
            "first_delay",
            "held_no_row",
            "inside_recent_window",
            "past_newest_event",
            "poll_instant",
            "provider_of",
            "read_told_instant",
            "reported_delete_instant",
            "reported_within_run",
            "run_cloud_scheduler",
            "run_sync",
            "stagger_offset",
            "check_adapter_environments",
            "validate_adapter_config",
            "whole_life_start",
        ]
    )
    for name in tally.reconcile.__all__:
        assert hasattr(tally.reconcile, name)


def test_openstack_exports() -> None:
    assert sorted(tally.openstack.__all__) == sorted(
        [
            "AdapterConfigError",
            "KeystoneUnavailable",
            "OpenStackAdapter",
            "OpenStackSettings",
            "ResolvedCloud",
            "TokenChecker",
            "TokenInfo",
            "clouds_yaml_locations",
            "find_clouds_yaml",
            "kept_connections",
            "negotiate_microversion",
            "parse_adapter_config",
            "resolve_cloud",
            "warn_if_unpinned",
        ]
    )
    assert tally.reconcile.ADAPTERS["openstack"] == "tally.openstack:OpenStackAdapter"
    assert tally.reconcile.adapter_class("openstack") is tally.openstack.OpenStackAdapter


def test_reconcile_does_not_import_the_layers_above_it() -> None:
    # ARCHITECTURE.md: http and daemon sit on top of reconcile; the arrows point one way.
    code = (
        "import sys, tally.reconcile, tally.openstack; "
        "print(sorted(m for m in sys.modules if m.startswith(('tally.http', 'tally.daemon'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_http_reexports_the_reconciliation_types() -> None:
    import tally.http

    assert tally.http.SyncOutcome is tally.reconcile.RunnerOutcome
    assert tally.http.UnknownCloud is tally.reconcile.UnknownCloud
    assert tally.http.SyncAlreadyRunning is tally.reconcile.SyncAlreadyRunning
