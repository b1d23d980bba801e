"""The broker URL: oslo's ``transport_url`` syntax read into hosts to try in turn and how to log in.

Accepted forms (``TALLY_OSC_AMQP_URL``)::

    rabbit://user:pass@h1:5672,user:pass@h2:5672/vhost?ssl=true
    amqp://user:pass@host:5672/vhost        amqps://user:pass@host:5671/vhost

A cluster is several comma-separated members, each ``[user[:password]@]host[:port]`` (``[::1]``
for IPv6); a member without credentials takes those of the member before it, as kolla writes them
on each. The path is the vhost (none: ``/``; ``/%2F`` says ``/`` explicitly). The query takes
``ssl`` (``true``/``1``; implied by ``amqps``), ``ssl_ca_file``/``cafile``,
``ssl_cert_file``/``certfile``, ``ssl_key_file``/``keyfile``, ``login_method``
(``PLAIN`` or ``EXTERNAL``: the client certificate's subject is the user), ``heartbeat`` and
``connect_timeout`` (seconds). Anything else is refused with a message naming it, so a typo never
silently means the default. Pure: no I/O except ``check_files``.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote

SCHEMES = ("rabbit", "amqp", "amqps")
DEFAULT_CONNECT_TIMEOUT_S = 5.0
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_ALIASES = {
    "ssl_ca_file": "cafile",
    "ssl_cert_file": "certfile",
    "ssl_key_file": "keyfile",
    "auth_mechanism": "login_method",
}
_KEYS = {"ssl", "cafile", "certfile", "keyfile", "login_method", "heartbeat", "connect_timeout"}


class AmqpUrlInvalid(ValueError):
    """A broker URL the collector cannot use; the message names the part."""


@dataclass(frozen=True, slots=True)
class BrokerHost:
    """One member of the cluster, with the credentials to log in there."""

    host: str
    port: int
    username: str
    password: str

    @property
    def where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class AmqpAddress:
    """Where and how to connect: the members in order, the vhost, TLS and the login mechanism."""

    hosts: tuple[BrokerHost, ...]
    vhost: str
    tls: bool = False
    heartbeat_s: int | None = None
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    login_method: str = "PLAIN"

    @classmethod
    def parse(cls, url: str) -> AmqpAddress:
        scheme, sep, rest = url.partition("://")
        if not sep:
            raise AmqpUrlInvalid("the AMQP URL has no scheme (write rabbit://, amqp:// or amqps://)")
        scheme = scheme.lower()
        if scheme not in SCHEMES:
            raise AmqpUrlInvalid(
                f"the AMQP URL's scheme {scheme!r} is not one of rabbit://, amqp://, amqps://"
            )
        netloc, tail = _split_netloc(rest)
        path, _, query_text = tail.partition("?")
        vhost = unquote(path[1:]) if len(path) > 1 else "/"
        query = _query(query_text)
        tls = scheme == "amqps" or _flag(query.get("ssl", "false"), "ssl")
        default_port = 5671 if tls else 5672
        hosts = _hosts(netloc, default_port)
        login_method = query.get("login_method", "PLAIN").upper()
        if login_method not in ("PLAIN", "EXTERNAL"):
            raise AmqpUrlInvalid(f"the AMQP URL's login_method {login_method!r} is not PLAIN or EXTERNAL")
        if login_method == "EXTERNAL" and not (tls and query.get("certfile")):
            raise AmqpUrlInvalid("login_method=EXTERNAL needs TLS and a client certificate (certfile)")
        if query.get("keyfile") and not query.get("certfile"):
            raise AmqpUrlInvalid("the AMQP URL names a keyfile without a certfile")
        if not tls and any(query.get(k) for k in ("cafile", "certfile", "keyfile")):
            raise AmqpUrlInvalid("the AMQP URL names TLS files but not TLS (use amqps:// or ?ssl=true)")
        return cls(
            hosts=hosts,
            vhost=vhost,
            tls=tls,
            heartbeat_s=int(_number(query, "heartbeat")) if "heartbeat" in query else None,
            connect_timeout_s=(
                _number(query, "connect_timeout") if "connect_timeout" in query else DEFAULT_CONNECT_TIMEOUT_S
            ),
            cafile=query.get("cafile") or None,
            certfile=query.get("certfile") or None,
            keyfile=query.get("keyfile") or None,
            login_method=login_method,
        )

    def check_files(self) -> None:
        """Raise ``AmqpUrlInvalid`` naming a TLS file that cannot be read or used."""
        for key, value in (("cafile", self.cafile), ("certfile", self.certfile), ("keyfile", self.keyfile)):
            if value is not None and not Path(value).is_file():
                raise AmqpUrlInvalid(f"the AMQP URL's {key} {value} does not exist or is not a file")
        try:
            self.ssl_context()
        except (ssl.SSLError, OSError) as exc:
            raise AmqpUrlInvalid(f"the AMQP URL's TLS files cannot be used: {exc}") from None

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.cafile)
        if self.certfile:
            context.load_cert_chain(self.certfile, self.keyfile)
        return context


def _query(text: str) -> dict[str, str]:
    query: dict[str, str] = {}
    for key, value in parse_qsl(text, keep_blank_values=True):
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in _KEYS:
            raise AmqpUrlInvalid(
                f"the AMQP URL's option {key!r} is unknown (known: {', '.join(sorted(_KEYS))})"
            )
        query[name] = value
    return query


def _flag(value: str, key: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise AmqpUrlInvalid(f"the AMQP URL's {key}={value!r} is not true or false")


def _number(query: dict[str, str], key: str) -> float:
    """A heartbeat (whole seconds, 0 turns it off) or a connect timeout (seconds, above 0)."""
    text = query[key]
    try:
        value = int(text) if key == "heartbeat" else float(text)
    except ValueError:
        raise AmqpUrlInvalid(f"the AMQP URL's {key} {text!r} is not a number") from None
    if value < 0 or (key == "connect_timeout" and value == 0):
        raise AmqpUrlInvalid(f"the AMQP URL's {key} {text!r} is out of range")
    return value


def _hosts(netloc: str, default_port: int) -> tuple[BrokerHost, ...]:
    hosts: list[BrokerHost] = []
    username, password = "guest", "guest"
    for number, member in enumerate(netloc.split(","), start=1):
        credentials, at, hostport = member.rpartition("@")
        if at:
            user, colon, secret = credentials.partition(":")
            username, password = unquote(user), unquote(secret) if colon else ""
        host, port = _host_port(hostport, default_port, number)
        hosts.append(BrokerHost(host, port, username, password))
    return tuple(hosts)


def _host_port(text: str, default_port: int, number: int) -> tuple[str, int]:
    where = (
        f"the AMQP URL's host {number} ({text!r})"
        if _BARE_HOST.fullmatch(text)
        else f"the AMQP URL's host {number}"
    )
    if text.startswith("["):
        host, bracket, tail = text[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise AmqpUrlInvalid(f"{where} is not [ipv6]:port")
        port_text = tail[1:] if tail else ""
    else:
        host, _, port_text = text.partition(":")
    if not host or any(c in host for c in " /@[]"):
        raise AmqpUrlInvalid(f"{where} has no usable host name")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise AmqpUrlInvalid(f"{where} has a bad port {port_text!r}")
    return host, int(port_text)


def _split_netloc(rest: str) -> tuple[str, str]:
    """(members, path-and-query) of what follows ``://``: the members end at the first ``/`` or
    ``?`` after the last ``@``, so a password holding either (unquoted) stays in the members."""
    at = rest.rfind("@")
    cut = len(rest)
    for mark in "/?":
        found = rest.find(mark, at + 1)
        if found != -1:
            cut = min(cut, found)
    return rest[:cut], rest[cut:]


_BARE_HOST = re.compile(r"(?:[\w.\-]+|\[[0-9A-Fa-f:.]+\])?(?::\d*)?")


def redact_url(url: str) -> str:
    """The URL with every member's password replaced by ``***``; never raises, whatever the URL.

    A member list it cannot read with certainty (a password holding a raw ``,``: a member that
    is not a host, or credentials without ``user:``) is hidden whole up to its last ``@``: better an
    unreadable log line than a password in it.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, tail = _split_netloc(rest)
    members = []
    for member in netloc.split(","):
        credentials, at, hostport = member.rpartition("@")
        if not _BARE_HOST.fullmatch(hostport) or (at and ":" not in credentials):
            return f"{scheme}{sep}***@{netloc.rpartition('@')[2]}{tail}" if "@" in netloc else url
        if at:
            credentials = credentials.partition(":")[0] + ":***"
        members.append(f"{credentials}{at}{hostport}")
    return f"{scheme}{sep}{','.join(members)}{tail}"
