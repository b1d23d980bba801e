"""The image, built and run for real: ``scripts/container build`` on a base made from Debian's
packages, then run read-only as its own uid and as an arbitrary uid of group 0, checked for its
health probe, readiness, a sync against the fake cloud from inside the container, a SIGTERM that
drains, and a volume one uid filled and another writes. Without a working podman the tests fail
under CI and skip elsewhere, saying why. Each test removes the containers and volumes it made; the
module removes the image (the Debian base stays cached, see scripts/container)."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from container_support import Container, bridge_gateway, build, engine, running, volume
from daemon_fakecloud import fake_cloud
from daemon_support import free_port
from deploy_support import CLOUD, clouds_config

ROOT = Path(__file__).resolve().parents[2]
ARBITRARY_USER = "123456:0"
# Within docs/install.md's promise of an orderly stop (TALLY_SHUTDOWN_GRACE_S=10 in the example).
STOP_WITHIN_S = 10


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    tag = f"localhost/tally-test:{uuid.uuid4().hex[:10]}"
    build(tag)
    try:
        yield tag
    finally:
        engine("rmi", "--force", tag, check=False)


def _labels(image: str) -> dict[str, str]:
    done = engine("image", "inspect", "--format", "{{json .Labels}}", image)
    labels: dict[str, str] = json.loads(done.stdout)
    return labels


def test_the_image_names_its_base_by_digest_and_its_revision(image: str) -> None:
    labels = _labels(image)
    base = labels["org.opencontainers.image.base.name"]
    assert base.startswith("localhost/tally-base:bookworm-"), base
    digest = engine("image", "inspect", "--format", "{{.Digest}}", base).stdout.strip()
    assert labels["org.opencontainers.image.base.digest"] == digest
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    assert labels["org.opencontainers.image.revision"].startswith(head.strip())
    # The base's own labels say which Debian it is: the suite and the archive's date.
    assert labels["org.debian.suite"] == "bookworm" and labels["org.debian.release-date"]
    healthcheck = engine("image", "inspect", "--format", "{{json .Config.Healthcheck}}", image).stdout
    assert "/healthz" in healthcheck, "the HEALTHCHECK was dropped (built without --format docker?)"


def _assert_healthy(container: Container) -> None:
    # No systemd here, so podman's timers never run the HEALTHCHECK: it runs on request.
    checked = engine("healthcheck", "run", container.name, check=False)
    assert checked.returncode == 0, f"the HEALTHCHECK failed: {checked.stdout}{checked.stderr}"


def test_its_uid_on_another_port_read_only_healthy_ready_and_sigterm_drains(image: str) -> None:
    port = 8181  # not the image's 8080: the HEALTHCHECK must ask the port the daemon listens on
    with (
        volume() as state,
        running(
            image,
            free_port(),
            "-e",
            f"TALLY_REPORTING_HTTP_PORT={port}",
            "-v",
            f"{state}:/var/lib/tally",
            container_port=port,
        ) as container,
    ):
        container.wait_ready()
        assert httpx.get(f"{container.url}/healthz").status_code == 200
        _assert_healthy(container)
        assert container.exec("id", "-u").stdout.strip() == "10001"
        assert container.exec("id", "-g").stdout.strip() == "0"
        written = container.exec("touch", "/opt/tally/probe", check=False)
        assert written.returncode != 0 and "Read-only file system" in written.stderr
        code, seconds = container.terminate()
        assert code == 0, container.logs()
        assert seconds < STOP_WITHIN_S
        assert "tally exiting code=0" in container.logs()


@pytest.fixture
def fake_cloud_for_containers(tmp_path: Path) -> Iterator[Path]:
    """The fake cloud on the host's bridge address; clouds.yaml and tally-clouds.yaml naming it as
    the container sees it (host.containers.internal), and an internal token file, in tmp_path."""
    with fake_cloud(bridge_gateway()) as base_url:
        port = base_url.rsplit(":", 1)[1]
        clouds_config(tmp_path, f"http://host.containers.internal:{port}")
        (tmp_path / "internal_token").write_text("internal-token-of-the-image-test\n")
        yield tmp_path


def test_another_uid_of_group_0_writes_the_volume_its_uid_filled_and_syncs(
    image: str, fake_cloud_for_containers: Path
) -> None:
    files = fake_cloud_for_containers
    mounts = [
        *("-v", f"{files / 'clouds.yaml'}:/etc/openstack/clouds.yaml:ro"),
        *("-v", f"{files / 'tally-clouds.yaml'}:/etc/tally/tally-clouds.yaml:ro"),
        *("-v", f"{files / 'internal_token'}:/run/secrets/internal_token:ro"),
        *("-e", "TALLY_REPORTING_CLOUDS_CONFIG=/etc/tally/tally-clouds.yaml"),
        *("-e", "TALLY_REPORTING_INTERNAL_TOKEN_FILE=/run/secrets/internal_token"),
        *("-e", "TALLY_REPORTING_SYNC_SETTLE_S=0"),
    ]
    with volume() as state:
        # The image's uid makes the store (migrations) and stops.
        with running(image, free_port(), "-v", f"{state}:/var/lib/tally") as first:
            first.wait_ready()
            assert first.terminate()[0] == 0, first.logs()
        with running(
            image, free_port(), "--user", ARBITRARY_USER, "-v", f"{state}:/var/lib/tally", *mounts
        ) as container:
            container.wait_ready()
            _assert_healthy(container)
            assert container.exec("id", "-u").stdout.strip() == ARBITRARY_USER.split(":")[0]
            # A write into the store the other uid created: /readyz alone would not show it.
            token = container.exec("tally", "token", "create", "--role", "admin").stdout.strip()
            assert (
                httpx.get(
                    f"{container.url}/api/v1/sync-runs?cloud={CLOUD}",
                    headers={"Authorization": f"Bearer {token}"},
                ).json()["items"]
                == []
            )
            synced = httpx.post(
                f"{container.url}/internal/sync/{CLOUD}",
                headers={"Authorization": "Bearer internal-token-of-the-image-test"},
                timeout=60,
            )
            assert synced.status_code == 200, synced.text + container.logs()
            assert synced.json()["stats"] == {"created": 2, "deleted": 0, "updated": 0}
            runs = httpx.get(
                f"{container.url}/api/v1/sync-runs?cloud={CLOUD}",
                headers={"Authorization": f"Bearer {token}"},
            ).json()["items"]
            assert [run["status"] for run in runs] == ["completed"]
            assert container.terminate()[0] == 0, container.logs()
