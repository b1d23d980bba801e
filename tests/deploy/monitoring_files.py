"""deploy/grafana/tally.json and deploy/prometheus/tally-alerts.yaml as the tests read them: every
panel target's expression (Grafana's variables replaced by what they stand for at query time) and
every alert rule's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "tally.json"
RULES = DEPLOY / "prometheus" / "tally-alerts.yaml"
RULE_TESTS = DEPLOY / "prometheus" / "tally-alerts.test.yaml"
# Grafana's variables, replaced by what they stand for at query time.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__range": "1h", "$cloud": ".*", "$instance": ".*"}


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, expression) of every target of every panel."""
    document: dict[str, Any] = json.loads(DASHBOARD.read_text())
    found = []
    for panel in document["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            found.append((panel["title"], expr))
    return found


def rule_expressions() -> list[tuple[str, str]]:
    """(alert name, expression) of every alert rule."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [(rule["alert"], rule["expr"]) for group in groups for rule in group["rules"]]
