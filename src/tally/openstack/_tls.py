"""TLS trust of the listings, taken from the keystoneauth1 session, so keystone and the listings agree.

keystoneauth1 talks through requests, which trusts ``verify`` (False, True or a CA
file, the clouds.yaml ``insecure``/``cacert``) and, when it is True, the bundle
``REQUESTS_CA_BUNDLE`` (or ``CURL_CA_BUNDLE``) names before certifi's. The
listings run on httpx; this module builds their ``SSLContext`` by the same rules,
with the client certificate (``cert``/``key``) loaded into it.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping

import certifi

# What requests reads when verify is True (requests.sessions.merge_environment_settings).
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


class TlsSettingsUnusable(Exception):
    """A CA file or client certificate named by clouds.yaml cannot be read or loaded."""


def ca_file(verify: bool | str, env: Mapping[str, str]) -> str | None:
    """The CA file a request trusts (None: no verification), as requests picks it."""
    if verify is False:
        return None
    if isinstance(verify, str):
        return verify
    for name in CA_BUNDLE_VARIABLES:
        if env.get(name):
            return env[name]
    return str(certifi.where())


def tls_context(
    verify: bool | str, cert: str | tuple[str, str] | None, env: Mapping[str, str] | None = None
) -> ssl.SSLContext:
    """The context of a listing client; raises ``TlsSettingsUnusable`` naming the file."""
    env = os.environ if env is None else env
    return _context(ca_file(verify, env), cert if isinstance(cert, str | None) else tuple(cert))


@functools.lru_cache(maxsize=8)
def _context(cafile: str | None, cert: str | tuple[str, ...] | None) -> ssl.SSLContext:
    # Built once per value: loading a CA bundle is costly (docs/benchmarks.md, section "sync"), and
    # every run builds one.
    try:
        if cafile is None:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise TlsSettingsUnusable(f"the CA file {cafile} cannot be used: {exc}") from exc
    if cert is not None:
        certfile, keyfile = (cert, None) if isinstance(cert, str) else (cert[0], cert[1])
        try:
            context.load_cert_chain(certfile, keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise TlsSettingsUnusable(f"the client certificate {certfile} cannot be used: {exc}") from exc
    return context
