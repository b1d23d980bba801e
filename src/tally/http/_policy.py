"""Who may read what with a keystone token: oslo.policy rules, their defaults and the operator's file.

A route a keystone token may call names a rule (``ROUTE_RULES``); a route without one takes Tally's
own tokens only. Three rules say how far a token reads once the route's rule lets it in, tried in
order: ``tally:read:all`` (every project of the token's cloud), ``tally:read:domain`` (every project
of the token's domain) and ``tally:read:project`` (the token's project). The credentials are
keystonemiddleware's (``roles``, ``project_id``, ``domain_id``, ``user_id``, ``system_scope``); the
target holds the token's own project or domain. Keystone puts implied roles in the token (admin
implies member, member implies reader), so ``role:reader`` also admits a member and an admin.

The operator's ``policy.yaml`` (``TALLY_REPORTING_POLICY_FILE``) overrides any default; a file that is
no YAML mapping of rule to check string, a rule name this module does not define, a check string
oslo.policy cannot parse, or a reference to a rule that does not exist, is refused when the app is
built, in one line naming the file and the rule. ``tally policy-defaults`` prints the defaults as
``oslopolicy-sample-generator`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from oslo_config import cfg
from oslo_policy import policy

BASE_RULES: tuple[policy.RuleDefault, ...] = (
    policy.RuleDefault("admin_or_service", "role:admin or role:service", "An admin or the service role."),
    policy.RuleDefault(
        "reader", "role:reader or role:member", "A reader (or a member) of the token's scope."
    ),
    policy.RuleDefault(
        "tally:read:all",
        "rule:admin_or_service",
        "Reads every project of the token's cloud.",
    ),
    policy.RuleDefault(
        "tally:read:domain",
        "rule:reader and domain_id:%(domain_id)s",
        "Reads every project of the token's domain (a domain-scoped token).",
    ),
    policy.RuleDefault(
        "tally:read:project",
        "rule:reader and project_id:%(project_id)s",
        "Reads the token's own project (a project-scoped token).",
    ),
    policy.RuleDefault(
        "tally:reader",
        "rule:tally:read:all or rule:tally:read:domain or rule:tally:read:project",
        "May call a read route at all (what it then sees: the three tally:read rules).",
    ),
)

#: operation id -> (rule, what the route reads), for the routes a keystone token may call.
ROUTE_RULES: Mapping[str, tuple[str, str]] = {
    "usage": ("tally:usage:get", "GET /api/v1/usage: usage of the projects the token reads"),
    "list_events": ("tally:events:list", "GET /api/v1/events: events of the projects the token reads"),
    "list_resources": ("tally:resources:list", "GET /api/v1/resources"),
    "resource_events": ("tally:resources:events", "GET /api/v1/resources/{cloud}/{type}/{id}/events"),
    "resource_lifecycle": (
        "tally:resources:lifecycle",
        "GET /api/v1/resources/{cloud}/{type}/{id}/lifecycle",
    ),
    "list_projects": (
        "tally:projects:list",
        "GET /api/v1/projects: the projects Tally knows the token reads",
    ),
    "get_project": ("tally:projects:get", "GET /api/v1/projects/{id}"),
    "project_summary": ("tally:projects:summary", "GET /api/v1/projects/{id}/summary"),
    "list_resource_types": ("tally:types:list", "GET /api/v1/resource-types: the size schemas"),
}
SCOPE_RULES = ("tally:read:all", "tally:read:domain", "tally:read:project")


def default_rules() -> tuple[policy.RuleDefault, ...]:
    routes = (policy.RuleDefault(rule, "rule:tally:reader", doc) for rule, doc in ROUTE_RULES.values())
    return (*BASE_RULES, *routes)


class PolicyFileError(ValueError):
    """The policy file cannot be used; one line naming the file and the rule."""


def _overrides(path: Path, known: set[str]) -> dict[str, str]:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PolicyFileError(f"{path}: the policy file cannot be read as YAML: {first}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise PolicyFileError(f"{path}: the policy file must map rule names to check strings")
    for name, check in document.items():
        if name not in known:
            raise PolicyFileError(f"{path}: unknown rule {name!r} (tally policy-defaults lists them)")
        if not isinstance(check, str):
            raise PolicyFileError(f"{path}: rule {name!r}: the check must be a string")
        # oslo.policy logs a check it cannot parse and reads it as "!" (deny all): only "!" itself says so.
        if str(policy.Rules.from_dict({name: check})[name]) == "!" and check.strip() != "!":
            raise PolicyFileError(f"{path}: rule {name!r}: cannot parse the check {check!r}")
    return dict(document)


class TallyPolicy:
    """The rules in force: the defaults, over which the operator's file (if any) is laid."""

    def __init__(self, path: Path | None = None) -> None:
        defaults = default_rules()
        checks = {rule.name: rule.check_str for rule in defaults}
        oslo_log = logging.getLogger("oslo_policy")
        quiet, oslo_log.disabled = oslo_log.disabled, True  # a parse failure is ours to word, in one line
        try:
            if path is not None:
                checks.update(_overrides(path, set(checks)))
            conf = cfg.ConfigOpts()
            conf([], project="tally", default_config_files=[], default_config_dirs=[])
            self._enforcer = policy.Enforcer(conf, use_conf=False)
            self._enforcer.register_defaults(defaults)
            self._enforcer.set_rules(policy.Rules.from_dict(checks), overwrite=True, use_conf=False)
        finally:
            oslo_log.disabled = quiet
        for name, check in checks.items():
            missing = _undefined(check, set(checks))
            if missing:
                raise PolicyFileError(f"{path}: rule {name!r} refers to the undefined rule {missing!r}")

    def allows(self, rule: str, creds: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
        return bool(self._enforcer.authorize(rule, dict(target), dict(creds), do_raise=False))


def _undefined(check: str, known: set[str]) -> str | None:
    for word in check.replace("(", " ").replace(")", " ").split():
        if word.startswith("rule:") and word[5:] not in known:
            return word[5:]
    return None


def sample_yaml() -> str:
    """The defaults as ``oslopolicy-sample-generator`` writes them: every rule commented out."""
    lines: list[str] = []
    for rule in default_rules():
        lines.append(f"# {rule.description}")
        lines.append(f'#"{rule.name}": "{rule.check_str}"')
        lines.append("")
    return "\n".join(lines)
