"""``tally collector``: map captured bodies, refuse bad configuration in one line, dump redacted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from collector_support import fixtures, oslo_inner, publish, service_exchanges, v2_body

from tally.cli import main


def _cases() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    cases = fixtures()
    return cases, [c["expected"] for c in cases if "skipped" not in c["expected"]]


def test_map_reads_one_body_jsonl_bodies_and_captures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TALLY_OSC_CLOUD", "os-dev")
    cases, expected = _cases()
    single = tmp_path / "one.json"
    single.write_text(json.dumps(cases[0]["notification"]["body"], indent=2))  # type: ignore[index]
    bodies = tmp_path / "bodies.jsonl"
    bodies.write_text("\n".join(json.dumps(c["notification"]["body"]) for c in cases[:10]) + "\n")  # type: ignore[index]
    captured = tmp_path / "notifications.jsonl"
    captured.write_text("\n".join(json.dumps(c["notification"]) for c in cases[10:]) + "\n\n")
    assert main(["collector", "map", str(single), str(bodies), str(captured)]) == 0
    out, err = capsys.readouterr()
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == cases[0]["expected"]
    assert events[1:] == expected
    assert err.count("skipped") == 3
    assert "reason=resize_source_host" in err


def test_map_names_an_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collector", "map", str(tmp_path / "missing.json")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_plain_http_reporting_url_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TALLY_STATE_DIR", str(tmp_path))
    # Its INFO lines (the outbox opened) are logs; a warning beside the error line would fail the test.
    monkeypatch.setenv("TALLY_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("TALLY_OSC_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    monkeypatch.setenv("TALLY_OSC_REPORTING_URL", "http://reporting.example:8080")
    monkeypatch.delenv("TALLY_OSC_REPORTING_INSECURE", raising=False)
    assert main(["collector"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "tally collector: error: TALLY_OSC_REPORTING_URL 'http://reporting.example:8080' is plain http; "
        "use https or set TALLY_OSC_REPORTING_INSECURE=true"
    ]


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("fault", "named"),
    [
        ("vhost", "refused the vhost (the broker closed the connection: 530 NOT_ALLOWED"),
        ("password", "refused the collector (the broker closed the connection: 403 ACCESS_REFUSED"),
        ("scheme", "scheme 'amqpx' is not one of rabbit://, amqp://, amqps://"),
        ("member", "host 2 (':5672') has no usable host name"),
        ("cafile", "cafile /nonexistent/ca.pem does not exist"),
        ("required", "do not exist on"),
    ],
)
def test_a_configuration_the_broker_refuses_stops_the_command_in_one_line(
    fault: str,
    named: str,
    amqp_url: str,
    unique: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = {
        "vhost": amqp_url.rsplit("/", 1)[0] + f"/{unique}-no-such-vhost",
        "password": amqp_url.replace(":guest@", ":wrong@"),
        "scheme": amqp_url.replace("amqp://", "amqpx://"),
        "member": amqp_url.replace("@127.0.0.1:5672", "@127.0.0.1:5672,guest:guest@:5672"),
        "cafile": amqp_url.replace("amqp://", "amqps://") + "?cafile=/nonexistent/ca.pem",
        "required": amqp_url,
    }[fault]
    monkeypatch.setenv("TALLY_STATE_DIR", str(tmp_path))
    # Its INFO lines (the outbox opened) are logs; a warning beside the error line would fail the test.
    monkeypatch.setenv("TALLY_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("TALLY_OSC_AMQP_URL", url)
    monkeypatch.setenv("TALLY_OSC_EXCHANGES", f"{unique}-a,{unique}-b")
    monkeypatch.setenv("TALLY_OSC_REQUIRE_EXCHANGES", str(fault == "required").lower())
    monkeypatch.setenv("TALLY_OSC_REPORTING_URL", "https://reporting.example")
    assert main(["collector"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tally collector: error: ")
    assert named in err[0]
    assert ":guest@" not in err[0] and ":wrong@" not in err[0]


@pytest.mark.anyio
@pytest.mark.rabbitmq
async def test_dump_prints_deliveries_with_credentials_redacted(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange = f"{unique}-nova"
    env = {
        "TALLY_OSC_AMQP_URL": amqp_url,
        "TALLY_OSC_EXCHANGES": exchange,
        "TALLY_STATE_DIR": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    inner = oslo_inner(
        "compute.instance.create.end",
        {"instance_id": "vm-1", "password": "hunter2"},
        _context_auth_token="gAAAAsecret-token",
        _context_service_catalog=[{"endpoints": ["x"]}],
    )
    async with service_exchanges(amqp_url, [exchange]) as channel:
        process = await anyio.open_process(
            [sys.executable, "-m", "tally", "collector", "--dump", "--count", "1"], env=env
        )
        with anyio.fail_after(30):
            while process.returncode is None:
                await publish(channel, exchange, v2_body(inner))
                with anyio.move_on_after(0.3):
                    await process.wait()
        assert process.stdout is not None
        out = (await process.stdout.receive()).decode()
    assert process.returncode == 0
    line = json.loads(out.splitlines()[0])
    assert line["exchange"] == exchange and line["routing_key"] == "notifications.info"
    assert line["properties"]["content_type"] == "application/json"
    message = line["body"]["oslo.message"]
    assert message["_context_auth_token"] == "***"
    assert message["_context_service_catalog"] == "***"
    assert message["payload"]["password"] == "***"
    assert message["payload"]["instance_id"] == "vm-1"
    assert "hunter2" not in out and "secret-token" not in out


@pytest.mark.rabbitmq
def test_a_user_without_permission_stops_the_command_naming_the_refusal(
    amqp_url: str,
    amqp_vhost: str,
    unique: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = f"tally-noperm-{unique}"
    subprocess.run(["rabbitmqctl", "add_user", user, "pw"], check=True, capture_output=True)
    try:
        # May log in to the vhost and read, but configure nothing: the exchange declare is refused.
        subprocess.run(
            ["rabbitmqctl", "set_permissions", "-p", amqp_vhost, user, "^$", "^$", ".*"],
            check=True,
            capture_output=True,
        )
        monkeypatch.setenv("TALLY_STATE_DIR", str(tmp_path))
        # Its INFO lines (the outbox opened) are logs; a warning beside the error line would fail the test.
        monkeypatch.setenv("TALLY_LOG_LEVEL", "WARNING")
        monkeypatch.setenv("TALLY_OSC_AMQP_URL", amqp_url.replace("guest:guest@", f"{user}:pw@"))
        monkeypatch.setenv("TALLY_OSC_EXCHANGES", f"{unique}-nova")
        monkeypatch.setenv("TALLY_OSC_REPORTING_URL", "https://reporting.example")
        assert main(["collector"]) == 2
    finally:
        subprocess.run(["rabbitmqctl", "delete_user", user], check=True, capture_output=True)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "403 ACCESS_REFUSED - access to exchange" in line and f"refused for user '{user}'" in line
    assert ":pw@" not in line


def test_the_standalone_collector_logs_with_journal_priorities(tmp_path: Path) -> None:
    """Under systemd its warnings reach the journal at priority 4, as the daemon's do."""
    stderr_path = tmp_path / "stderr"
    with stderr_path.open("w") as stderr:
        status = stderr_path.stat()
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
            "JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}",
            "TALLY_STATE_DIR": str(tmp_path / "state"),
            # Nothing listens on port 1: the collector warns that it is not consuming and keeps trying.
            "TALLY_OSC_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/",
            "TALLY_OSC_REPORTING_URL": "https://reporting.example",
            "TALLY_OSC_HTTP_PORT": "0",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "tally", "collector"],
            env=env,
            stderr=stderr,
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while (
                "<4>" not in stderr_path.read_text()
                and process.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.1)
        finally:
            process.terminate()
            process.wait(timeout=30)
    lines = stderr_path.read_text().splitlines()
    assert any(line.startswith("<4>") and "tally.collector" in line for line in lines), lines
