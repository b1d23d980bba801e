"""``tally config show``: the effective settings as ``TALLY_X=value`` lines, secrets redacted.

Secrets print as ``***``; a secret that is a URL keeps its scheme, user and host so an operator can
see where it points (``postgresql://tally:***@db:5432/tally``). Passwords inside any other URL-valued
setting are redacted the same way, since an operator may have put credentials there too.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import SecretStr

from ._load import secret_fields, variable_of
from ._settings import Settings

REDACTED = "***"
_SECRET_QUERY_KEYS = frozenset({"password", "passwd", "token", "secret", "sslpassword"})


def redact_url(value: str) -> str:
    """``value`` with any password (userinfo or query parameter) replaced by ``***``."""
    parts = urlsplit(value)
    if not parts.scheme or not (parts.netloc or parts.query):
        return value
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, REDACTED if k.lower() in _SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _shown(field: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, SecretStr):
        secret = value.get_secret_value()
        parts = urlsplit(secret)
        if parts.scheme and parts.netloc:
            redacted = redact_url(secret)
            # A URL with no password in it is still a secret setting: hide all but the scheme then.
            return redacted if redacted != secret else f"{parts.scheme}://{REDACTED}"
        return REDACTED
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return redact_url(text) if "://" in text else text


def render_settings(settings: Settings) -> list[str]:
    """One ``TALLY_X=value`` line per setting, in declaration order, secrets redacted."""
    secrets = secret_fields()
    lines = []
    for field in Settings.model_fields:
        value = getattr(settings, field)
        shown = _shown(field, value)
        if field in secrets and value is not None and not shown:
            shown = REDACTED
        lines.append(f"{variable_of(field)}={shown}")
    return lines
