"""Loading settings: one-line refusals, ``_FILE`` secrets, warnings for unknown variables."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tally.config import ConfigError, Settings, load_settings
from tally.config.internals import unknown_variables


def test_embedded_defaults_load_from_an_empty_environment() -> None:
    settings = load_settings({})
    assert settings == Settings.model_validate({})
    assert settings.reporting_sync_budget_s == 45
    assert settings.store_url.startswith("sqlite:///")


def test_values_are_read_and_converted() -> None:
    settings = load_settings(
        {
            "TALLY_REPORTING_SYNC_BUDGET_S": "120",
            "TALLY_METRICS_ENABLED": "false",
            "TALLY_LOG_LEVEL": "debug",
            "TALLY_STATE_DIR": "/var/lib/tally",
            "TALLY_REPORTING_OIDC_JWKS_URL": "",
        }
    )
    assert settings.reporting_sync_budget_s == 120
    assert settings.metrics_enabled is False
    assert settings.log_level == "DEBUG"
    assert settings.state_dir == Path("/var/lib/tally")
    assert settings.reporting_oidc_jwks_url is None


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"TALLY_REPORTING_SYNC_BUDGET_S": "0"},
            "TALLY_REPORTING_SYNC_BUDGET_S=0 is outside the allowed range 1..86400",
        ),
        (
            {"TALLY_REPORTING_SYNC_SETTLE_S": "3601"},
            "TALLY_REPORTING_SYNC_SETTLE_S=3601 is outside the allowed range 0..3600",
        ),
        (
            {"TALLY_OSC_FLUSH_INTERVAL_S": "0"},
            "TALLY_OSC_FLUSH_INTERVAL_S=0 is outside the allowed range 0 (exclusive)..3600",
        ),
        ({"TALLY_REPORTING_HTTP_PORT": "http"}, "TALLY_REPORTING_HTTP_PORT=http is not an integer"),
        (
            {"TALLY_METRICS_ENABLED": "maybe"},
            "TALLY_METRICS_ENABLED=maybe is not a boolean (expected true or false)",
        ),
        ({"TALLY_LOG_FORMAT": "xml"}, "TALLY_LOG_FORMAT=xml is not one of 'plain' or 'json'"),
    ],
)
def test_bad_values_refuse_with_one_line(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(environ)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


def test_secret_file_variant_is_read(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    settings = load_settings({"TALLY_OSC_TOKEN_FILE": str(token)})
    assert settings.osc_token is not None
    assert settings.osc_token.get_secret_value() == "s3cret-token"
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    "field",
    [
        "reporting_db_url",
        "reporting_internal_token",
        "osc_amqp_url",
        "osc_token",
        "sim_amqp_url",
        "sim_api_token",
    ],
)
def test_every_secret_takes_a_file_variant(tmp_path: Path, field: str) -> None:
    secret = tmp_path / "secret"
    secret.write_text("value-from-file")
    settings = load_settings({f"TALLY_{field.upper()}_FILE": str(secret)})
    assert getattr(settings, field).get_secret_value() == "value-from-file"


def test_secret_and_its_file_variant_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("x")
    with pytest.raises(ConfigError, match="TALLY_OSC_TOKEN and TALLY_OSC_TOKEN_FILE are both set"):
        load_settings({"TALLY_OSC_TOKEN": "y", "TALLY_OSC_TOKEN_FILE": str(tmp_path / "t")})


def test_unreadable_secret_file_names_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError) as info:
        load_settings({"TALLY_REPORTING_INTERNAL_TOKEN_FILE": str(missing)})
    assert str(info.value).startswith(f"TALLY_REPORTING_INTERNAL_TOKEN_FILE={missing}: cannot read the file")


def test_unknown_tally_variable_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    environ = {"TALLY_REPORTING_SYNC_BUDGETS": "30", "TALLY_OSC_TOKEN_FILE": "/dev/null", "HOME": "/root"}
    assert unknown_variables(environ) == ["TALLY_REPORTING_SYNC_BUDGETS"]
    with caplog.at_level(logging.WARNING, logger="tally.config"):
        load_settings(environ)
    assert [r.getMessage() for r in caplog.records] == [
        "unknown setting ignored variable=TALLY_REPORTING_SYNC_BUDGETS (check the spelling)"
    ]


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", "7")
    assert load_settings().reporting_sync_settle_s == 7
