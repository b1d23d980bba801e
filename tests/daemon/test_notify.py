"""sd_notify: messages reach the socket systemd names, abstract or not, and the watchdog is opt-in."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from pathlib import Path

import pytest

from tally.daemon._notify import Notifier


def test_notify_sends_one_datagram_per_call(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        sock.settimeout(2)
        Notifier(str(tmp_path / "notify")).notify("READY=1", "STATUS=running")
        assert sock.recv(4096) == b"READY=1\nSTATUS=running"


def test_abstract_socket_address(tmp_path: Path) -> None:
    name = f"tally-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        Notifier.from_environ({"NOTIFY_SOCKET": "@" + name}).notify("STOPPING=1")
        assert sock.recv(4096) == b"STOPPING=1"


def test_without_notify_socket_nothing_is_sent_and_nothing_fails() -> None:
    notifier = Notifier.from_environ({})
    assert notifier.address is None
    notifier.notify("READY=1")


def test_watchdog_interval_is_half_of_watchdog_usec_for_this_process_only() -> None:
    mine = Notifier.from_environ({"WATCHDOG_USEC": "20000000", "WATCHDOG_PID": str(os.getpid())})
    assert mine.watchdog_interval_s == 10.0
    other = Notifier.from_environ({"WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "1"})
    assert other.watchdog_interval_s is None
    assert Notifier.from_environ({"WATCHDOG_USEC": "garbage"}).watchdog_interval_s is None


def test_unreachable_socket_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    address = str(tmp_path / "nobody-listens")
    with caplog.at_level(logging.WARNING, logger="tally.daemon._notify"):
        Notifier(address).notify("READY=1")
    [record] = [r for r in caplog.records if r.name == "tally.daemon._notify"]
    assert record.levelno == logging.WARNING
    assert f"sd_notify failed socket={address} error=" in record.getMessage()
