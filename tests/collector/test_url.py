"""The broker URL in oslo's transport_url syntax: members, credentials, vhost, TLS, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.collector._url import AmqpAddress, AmqpUrlInvalid, BrokerHost, redact_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("amqp://guest:guest@127.0.0.1:5672/", ("127.0.0.1", 5672, "guest", "guest", "/", False, None)),
        ("amqp://rabbit", ("rabbit", 5672, "guest", "guest", "/", False, None)),
        ("amqps://u%40x:p%3Aw@mq/%2Fprod?heartbeat=20", ("mq", 5671, "u@x", "p:w", "/prod", True, 20)),
        ("amqp://u:p@mq:5673/openstack", ("mq", 5673, "u", "p", "openstack", False, None)),
        ("rabbit://u:p@mq//", ("mq", 5672, "u", "p", "/", False, None)),
        ("rabbit://u:p@mq:5671/?ssl=true", ("mq", 5671, "u", "p", "/", True, None)),
        ("amqp://u:p@[fd00::1]:5673/v", ("fd00::1", 5673, "u", "p", "v", False, None)),
    ],
)
def test_urls_give_host_login_vhost_and_heartbeat(url: str, expected: tuple[object, ...]) -> None:
    a = AmqpAddress.parse(url)
    (h,) = a.hosts
    assert (h.host, h.port, h.username, h.password, a.vhost, a.tls, a.heartbeat_s) == expected


def test_a_cluster_is_every_member_in_order_with_its_credentials() -> None:
    a = AmqpAddress.parse("rabbit://a:pa@h1:5672,b:pb@h2:5673,h3/openstack?connect_timeout=2.5")
    assert a.hosts == (
        BrokerHost("h1", 5672, "a", "pa"),
        BrokerHost("h2", 5673, "b", "pb"),
        BrokerHost("h3", 5672, "b", "pb"),  # no credentials of its own: the member before's
    )
    assert (a.vhost, a.connect_timeout_s) == ("openstack", 2.5)


def test_tls_files_and_external_login(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    url = f"amqps://mq/?ssl_ca_file={ca}&ssl_cert_file={tmp_path}/c.pem&ssl_key_file={tmp_path}/k.pem"
    a = AmqpAddress.parse(url + "&login_method=EXTERNAL")
    assert (a.cafile, a.certfile, a.keyfile, a.login_method) == (
        str(ca),
        f"{tmp_path}/c.pem",
        f"{tmp_path}/k.pem",
        "EXTERNAL",
    )
    with pytest.raises(AmqpUrlInvalid, match=f"cafile {ca} does not exist"):
        a.check_files()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://mq/", "scheme 'http' is not one of rabbit://, amqp://, amqps://"),
        ("mq:5672", "has no scheme"),
        ("amqp://mq:99999/", r"host 1 \('mq:99999'\) has a bad port"),
        ("rabbit://u:p@h1:5672,u:p@:5672/", r"host 2 \(':5672'\) has no usable host name"),
        ("rabbit://u:p@h1:5672,,h3/", r"host 2 \(''\) has no usable host name"),
        ("amqp://mq/?heartbeat=soon", "heartbeat 'soon' is not a number"),
        ("amqp://mq/?connect_timeout=0", "connect_timeout '0' is out of range"),
        ("amqp://mq/?ssl=maybe", "ssl='maybe' is not true or false"),
        ("amqp://mq/?sslca=/x", "option 'sslca' is unknown"),
        ("amqp://mq/?cafile=/x", "names TLS files but not TLS"),
        ("amqps://mq/?login_method=EXTERNAL", "EXTERNAL needs TLS and a client certificate"),
        ("amqps://mq/?login_method=KERBEROS", "login_method 'KERBEROS' is not PLAIN or EXTERNAL"),
    ],
)
def test_unusable_urls_say_what_is_wrong_in_one_line(url: str, message: str) -> None:
    with pytest.raises(AmqpUrlInvalid, match=message) as caught:
        AmqpAddress.parse(url)
    assert "\n" not in str(caught.value)


def test_redaction_hides_every_members_password() -> None:
    url = "rabbit://a:s3cret@h1:5672,b:0ther@h2:5672/v?ssl=1"
    assert redact_url(url) == "rabbit://a:***@h1:5672,b:***@h2:5672/v?ssl=1"
    assert redact_url("amqp://mq/") == "amqp://mq/"


@given(st.text(), st.text())
def test_redaction_never_raises_and_never_shows_a_password(before: str, after: str) -> None:
    """Passwords holding raw separators (``,``, ``:``, ``/``, ``?``) included."""
    secret = f"{before}S3CRET{after}".replace("@", "")
    for url in (f"rabbit://user:{secret}@h1:99999999,x:y@h2/v", f"rabbit://a:b@h1,user:{secret}@h2:5672/"):
        assert "S3CRET" not in redact_url(url)
