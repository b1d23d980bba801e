"""What ``tally run`` checks in the settings before anything starts, beyond each setting's own range.

A refusal is one line and exit code 2, and nothing was started (no state directory, no socket): a
daemon must never run half-configured. A warning is logged and the daemon starts.
"""

from __future__ import annotations

import logging

from tally.config import Settings

from ._collector import amqp_url_problem, http_sink_problem

log = logging.getLogger(__name__)


def refusal(settings: Settings) -> str | None:
    """Why the daemon must not start with ``settings`` (one line naming the variable), or None."""
    if settings.reporting_oidc_jwks_url is not None:
        # The spec: must be unset. OIDC is not supported, so a set value would be silently ignored.
        return "TALLY_REPORTING_OIDC_JWKS_URL is set, but OIDC is not supported: unset it"
    if settings.osc_amqp_url is not None:
        problem = http_sink_problem(settings) or amqp_url_problem(settings)
        if problem is not None:
            return problem
    return None


def warn_about(settings: Settings) -> None:
    """Log the settings that work but are probably not what the operator meant."""
    if (
        settings.reporting_enabled
        and settings.reporting_auth_mode == "enforced"
        and settings.reporting_internal_token is None
    ):
        log.warning(
            "no internal token: TALLY_REPORTING_INTERNAL_TOKEN is unset, so every /internal route "
            "answers 401 (sync triggers, projection rebuild)"
        )
