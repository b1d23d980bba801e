"""deploy/grafana/tally.json and deploy/prometheus/: every expression parses (promtool, the parser
Prometheus itself uses) and names only metrics a running daemon exposes; the alert rules pass
``promtool check rules`` and our ``promtool test rules`` cases."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from deploy_support import Scrapes, exposed_names
from monitoring_files import RULE_TESTS, RULES, dashboard_expressions, rule_expressions

# Names that Prometheus itself provides for every target.
PROMETHEUS_OWN = {"up"}
METRIC_NAME = re.compile(r"\btally_[a-z0-9_]+\b")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool is not installed (Debian's prometheus package; scripts/test installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def test_every_dashboard_expression_parses(tmp_path: Path) -> None:
    expressions = dashboard_expressions()
    assert len(expressions) >= 25
    rules = [
        {"record": f"tally:dashboard:{index}", "expr": expr} for index, (_, expr) in enumerate(expressions)
    ]
    path = tmp_path / "dashboard-as-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_broken_expression_is_caught_by_the_same_check(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    broken = {"record": "tally:broken", "expr": "sum by (cloud (rate(tally_sync_runs_total[5m]))"}
    path.write_text(yaml.safe_dump({"groups": [{"name": "broken", "rules": [broken]}]}))
    done = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode != 0


def test_the_dashboard_and_the_rules_name_only_exposed_metrics(daemon_scrapes: Scrapes) -> None:
    exposed = exposed_names(daemon_scrapes.first) | PROMETHEUS_OWN
    for where, expr in dashboard_expressions() + rule_expressions():
        unknown = set(METRIC_NAME.findall(expr)) - exposed
        assert not unknown, f"{where}: {sorted(unknown)} not exposed by tally run"


def test_the_dashboard_covers_what_an_operator_reads() -> None:
    named = {name for _, expr in dashboard_expressions() for name in METRIC_NAME.findall(expr)}
    for needed in (
        "tally_sync_last_completed_timestamp_seconds",
        "tally_sync_duration_seconds_bucket",
        "tally_sync_resources_reconciled_total",
        "tally_sync_resources_deferred_total",
        "tally_sync_errors_total",
        "tally_collector_received_total",
        "tally_collector_queue_messages",
        "tally_collector_outbox_depth",
        "tally_collector_outbox_oldest_age_seconds",
        "tally_events_ingested_total",
        "tally_events_deduplicated_total",
        "tally_events_rejected_total",
        "tally_ingest_batch_duration_seconds_bucket",
        "tally_http_requests_total",
        "tally_http_request_duration_seconds_bucket",
        "tally_actor_restarts_total",
    ):
        assert needed in named, needed


def test_the_alert_rules_pass_promtool_check_and_our_unit_tests() -> None:
    checked = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, cwd=RULES.parent
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_alert_has_a_case_in_the_rule_tests_or_is_named_here() -> None:
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {t["alertname"] for case in cases for t in case.get("alert_rule_test", [])}
    # Simple thresholds over one gauge, read off the rule itself.
    untested = {
        "TallyAbsent",
        "TallySyncDeferredStuck",
        "TallySyncCloudConfigInvalid",
    }
    assert {name for name, _ in rule_expressions()} - tested == untested
