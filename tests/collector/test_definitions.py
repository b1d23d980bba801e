"""``tally collector definitions``: the document a broker loads at boot to keep the collector's bindings.

That the broker then loses nothing across restarts is shown on a real node in test_broker_faults.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tally.cli import main
from tally.collector import broker_definitions
from tally.collector._amqp import AmqpConfig


def test_every_exchange_is_bound_on_every_topic_with_the_services_durability() -> None:
    config = AmqpConfig(
        url="",
        exchanges=("nova", "octavia"),
        topics=("notifications.info", "notifications.error"),
        queue_name="tally-q",
        queue_type="quorum",
    )
    found = broker_definitions(config, "openstack")
    assert found["vhosts"] == [{"name": "openstack"}]
    assert [(e["name"], e["type"], e["durable"], e["vhost"]) for e in found["exchanges"]] == [
        ("nova", "topic", False, "openstack"),
        ("octavia", "topic", False, "openstack"),
    ]
    assert found["queues"] == [
        {
            "name": "tally-q",
            "vhost": "openstack",
            "durable": True,
            "auto_delete": False,
            "arguments": {"x-queue-type": "quorum"},
        }
    ]
    assert {(b["source"], b["routing_key"], b["destination"]) for b in found["bindings"]} == {
        (exchange, topic, "tally-q") for exchange in config.exchanges for topic in config.topics
    }
    durable = broker_definitions(
        AmqpConfig(url="", exchanges=("nova",), topics=("t",), durable_exchanges=True), "/"
    )
    assert durable["exchanges"][0]["durable"] is True
    assert durable["queues"][0]["arguments"] == {}


def test_the_command_writes_the_vhost_of_the_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TALLY_OSC_AMQP_URL", "rabbit://u:p@h1:5672,u:p@h2:5672/open%2Fstack")
    monkeypatch.setenv("TALLY_OSC_EXCHANGES", "nova,glance")
    out = tmp_path / "defs.json"
    assert main(["collector", "definitions", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["vhosts"] == [{"name": "open/stack"}]
    assert [e["name"] for e in written["exchanges"]] == ["nova", "glance"]
    assert "p@" not in out.read_text()
    assert main(["collector", "definitions"]) == 0
    assert json.loads(capsys.readouterr().out) == written


def test_without_a_broker_url_it_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TALLY_OSC_AMQP_URL", raising=False)
    assert main(["collector", "definitions"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "tally collector definitions: error: TALLY_OSC_AMQP_URL is not set: the definitions are for its vhost"
    ]
