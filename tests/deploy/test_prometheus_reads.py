"""The dashboard and the alert rules read by a real Prometheus that scraped a real daemon through a
simulated month (``prometheus_support``): every panel's every expression, evaluated by Prometheus,
returns series; every alert rule is loaded and evaluates without error. A panel that names a metric
the daemon no longer exposes, or one that stays empty through a month, fails here."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
from monitoring_files import dashboard_expressions, rule_expressions
from prometheus_support import month_in_prometheus

pytestmark = pytest.mark.rabbitmq

METRIC_NAME = re.compile(r"\btally_[a-z0-9_]+\b")
# A histogram's samples are declared under the family's name.
FAMILY = re.compile(r"(_bucket|_count|_sum)$")


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory, amqp_url: str) -> Iterator[str]:
    yield from month_in_prometheus(tmp_path_factory.mktemp("prometheus"), amqp_url)


def _query(url: str, expr: str) -> list[dict[str, object]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    result: list[dict[str, object]] = answer["data"]["result"]
    return result


def test_every_panel_expression_returns_series_after_a_month(prometheus_url: str) -> None:
    expressions = dashboard_expressions()
    assert len(expressions) >= 25
    empty = [f"{title}: {expr}" for title, expr in expressions if not _query(prometheus_url, expr)]
    assert not empty, "expressions Prometheus answered with no series:\n" + "\n".join(empty)


def test_every_metric_the_panels_and_rules_name_is_in_the_scraped_metadata(prometheus_url: str) -> None:
    """A panel's fallback to 0 must not hide a renamed metric: each family named is one the daemon's
    exposition declared (its # TYPE line), as Prometheus recorded it."""
    answer = httpx.get(f"{prometheus_url}/api/v1/targets/metadata", timeout=10).json()
    declared = {entry["metric"] for entry in answer["data"]}
    named = {
        FAMILY.sub("", name)
        for _, expr in dashboard_expressions() + rule_expressions()
        for name in METRIC_NAME.findall(expr)
    }
    assert named - declared == set(), "named by deploy/ but not declared by tally run"


def test_every_alert_rule_is_loaded_and_evaluates(prometheus_url: str) -> None:
    wanted = {name for name, _ in rule_expressions()}
    deadline = time.monotonic() + 15
    while True:
        groups = httpx.get(f"{prometheus_url}/api/v1/rules", timeout=10).json()["data"]["groups"]
        rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
        if all(rule["health"] != "unknown" for rule in rules.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(rules) == wanted
    broken = {name: rule.get("lastError") for name, rule in rules.items() if rule["health"] != "ok"}
    assert not broken, broken
