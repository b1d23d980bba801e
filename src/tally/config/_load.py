"""Reading ``Settings`` from the environment, strictly.

Why not let pydantic-settings read ``os.environ`` itself: we want (1) one line per refusal that names
the variable, its value and the allowed range instead of a multi-line validation report, (2) a warning
for every ``TALLY_*`` variable that names no setting, because a typo must not pass silently, and (3)
the ``_FILE`` variant of each secret (``TALLY_OSC_TOKEN_FILE=/run/secrets/token``) read here, so the
secret never has to sit in the environment.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import SecretStr, ValidationError

from ._errors import ConfigError
from ._settings import Settings

log = logging.getLogger(__name__)

PREFIX = "TALLY_"
FILE_SUFFIX = "_FILE"


def _annotation_args(field: str) -> tuple[Any, ...]:
    annotation = Settings.model_fields[field].annotation
    if get_origin(annotation) in (Union, UnionType):
        return get_args(annotation)
    return (annotation,)


def secret_fields() -> frozenset[str]:
    """Fields holding a secret: they take a ``_FILE`` variant and are never printed."""
    return frozenset(name for name in Settings.model_fields if SecretStr in _annotation_args(name))


def variable_of(field: str) -> str:
    return f"{PREFIX}{field.upper()}"


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """``TALLY_*`` variables in ``environ`` that name no setting (nor a secret's ``_FILE`` variant)."""
    known = {variable_of(f) for f in Settings.model_fields}
    known |= {variable_of(f) + FILE_SUFFIX for f in secret_fields()}
    return sorted(k for k in environ if k.upper().startswith(PREFIX) and k.upper() not in known)


def _read_secret_file(variable: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(f"{variable}={path}: cannot read the file: {exc.strerror}") from None


def _raw_values(environ: Mapping[str, str]) -> dict[str, str]:
    upper = {k.upper(): v for k, v in environ.items() if k.upper().startswith(PREFIX)}
    secrets = secret_fields()
    values: dict[str, str] = {}
    for field in Settings.model_fields:
        variable = variable_of(field)
        value = upper.get(variable)
        file_variable = variable + FILE_SUFFIX
        if field in secrets and file_variable in upper:
            if value is not None:
                raise ConfigError(f"{variable} and {file_variable} are both set; set only one")
            value = _read_secret_file(file_variable, upper[file_variable])
        if value is None:
            continue
        if value == "" and NoneType in _annotation_args(field):
            continue  # an empty optional setting means unset, as in most env-file tooling
        values[field] = value.upper() if field == "log_level" else value
    return values


def allowed_range(field: str) -> str | None:
    """The field's range as text, e.g. ``1..86400``; None when it has no bounds."""
    low = high = None
    for bound in Settings.model_fields[field].metadata:
        if isinstance(bound, Ge):
            low = f"{bound.ge}"
        elif isinstance(bound, Gt):
            low = f"{bound.gt} (exclusive)"
        elif isinstance(bound, Le):
            high = f"{bound.le}"
        elif isinstance(bound, Lt):
            high = f"{bound.lt} (exclusive)"
    if low is None and high is None:
        return None
    return f"{low or ''}..{high or ''}"


def _one_line(error: ValidationError, values: Mapping[str, str]) -> str:
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    if field not in Settings.model_fields:
        return f"invalid settings: {first['msg']}"
    variable = variable_of(field)
    shown = "(secret)" if field in secret_fields() else values.get(field, "")
    kind = first["type"]
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        return f"{variable}={shown} is outside the allowed range {allowed_range(field)}"
    if kind == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        return f"{variable}={shown} is not one of {expected}"
    if kind == "bool_parsing":
        return f"{variable}={shown} is not a boolean (expected true or false)"
    if kind in {"int_parsing", "int_from_float"}:
        return f"{variable}={shown} is not an integer"
    if kind == "float_parsing":
        return f"{variable}={shown} is not a number"
    return f"{variable}={shown} is invalid: {first['msg']}"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default ``os.environ``); ``ConfigError`` with one line if any is bad.

    Unknown ``TALLY_*`` variables are logged as warnings, one line each.
    """
    env = os.environ if environ is None else environ
    values = _raw_values(env)
    for name in unknown_variables(env):
        log.warning("unknown setting ignored variable=%s (check the spelling)", name)
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc, values)) from None
