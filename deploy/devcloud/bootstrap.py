"""From empty databases to a keystone that knows the cloud: schema syncs, keystone's own setup,
the catalog, the service users, and nova's cells.

The schema syncs of the seven services are independent, so they run side by side (each one is
mostly Python start-up and SQL round trips); keystone's setup follows its own sync.
"""

from __future__ import annotations

import getpass
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import api
from .errors import DevcloudError
from .layout import APIS, HOST, REGION, Layout

SERVICE_USERS = ("placement", "nova", "glance", "neutron", "cinder", "octavia")
SYNC_TIMEOUT_S = 300


def _run_chain(layout: Layout, name: str, commands: list[list[str]]) -> None:
    log = layout.logs / f"setup-{name}.log"
    with log.open("a") as out:
        for command in commands:
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            began = time.monotonic()
            try:
                done = subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, cwd=layout.state, timeout=SYNC_TIMEOUT_S,
                    check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired as error:
                raise DevcloudError(
                    f"{Path(command[0]).name} {command[-1]} ran past {SYNC_TIMEOUT_S}s (log: {log})"
                ) from error
            out.write(f"-- exit {done.returncode} after {time.monotonic() - began:.1f}s\n")
            if done.returncode != 0:
                raise DevcloudError(f"{Path(command[0]).name} {command[-1]} failed for {name} (log: {log})")


def sync_schemas(layout: Layout, admin_password: str) -> None:
    """Every service's schema, keystone set up and bootstrapped with the admin account."""
    etc, b = layout.etc, layout.bin
    keystone_conf = ["--config-file", str(etc / "keystone" / "keystone.conf")]
    nova_conf = ["--config-file", str(etc / "nova" / "nova.conf")]
    user = getpass.getuser()
    url = f"{layout.url('keystone')}/v3"
    (layout.data / "keystone").mkdir(parents=True, exist_ok=True)
    chains: dict[str, list[list[str]]] = {
        "keystone": [
            [b("keystone-manage"), *keystone_conf, "db_sync"],
            [b("keystone-manage"), *keystone_conf, "fernet_setup", "--keystone-user", user,
             "--keystone-group", user],
            [b("keystone-manage"), *keystone_conf, "credential_setup", "--keystone-user", user,
             "--keystone-group", user],
            [b("keystone-manage"), *keystone_conf, "bootstrap", "--bootstrap-password", admin_password,
             "--bootstrap-region-id", REGION, "--bootstrap-admin-url", url, "--bootstrap-public-url", url,
             "--bootstrap-internal-url", url],
        ],
        "placement": [[b("placement-manage"), "--config-file", str(etc / "placement" / "placement.conf"),
                       "db", "sync"]],
        "glance": [[b("glance-manage"), "--config-file", str(etc / "glance" / "glance-api.conf"), "db_sync"]],
        "neutron": [[b("neutron-db-manage"), "--config-file", str(etc / "neutron" / "neutron.conf"),
                     "upgrade", "heads"]],
        "cinder": [[b("cinder-manage"), "--config-file", str(etc / "cinder" / "cinder.conf"), "db", "sync"]],
        "octavia": [[b("octavia-db-manage"), "--config-file", str(etc / "octavia" / "octavia.conf"),
                     "upgrade", "head"]],
        "nova": [
            [b("nova-manage"), *nova_conf, "api_db", "sync"],
            [b("nova-manage"), *nova_conf, "cell_v2", "map_cell0", "--database_connection",
             layout.db_url("nova_cell0")],
            [b("nova-manage"), *nova_conf, "cell_v2", "create_cell", "--name", "cell1", "--verbose"],
            [b("nova-manage"), *nova_conf, "db", "sync"],
        ],
    }  # fmt: skip
    with ThreadPoolExecutor(max_workers=len(chains)) as pool:
        futures = [pool.submit(_run_chain, layout, name, commands) for name, commands in chains.items()]
        for future in futures:
            future.result()


def octavia_ca(layout: Layout) -> None:
    """The CA octavia's certificate task signs its (no-op) amphorae's certificates with."""
    directory = layout.data / "octavia"
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
         "-subj", "/CN=devcloud-octavia-ca",
         "-keyout", str(directory / "ca.key"), "-out", str(directory / "ca.pem")],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise DevcloudError(
            f"openssl could not make octavia's CA in {directory}: {done.stderr.strip()[:200]}"
        )


def catalog(layout: Layout, admin_password: str, service_password: str) -> None:
    """The services, their endpoints, the service project and one user per service (admin, service)."""
    auth_url = f"{layout.url('keystone')}/v3"
    token, _ = api.password_token(auth_url, "admin", admin_password, "admin")

    def post(path: str, body: dict[str, object], what: str) -> dict[str, object]:
        answer = api.request("POST", f"{auth_url}{path}", token=token, body=body)
        created: dict[str, object] = api.expect(answer, what, 201)
        return created

    for name, service_type, path in APIS[1:]:
        service = post("/services", {"service": {"name": name, "type": service_type, "enabled": True}}, name)
        service_id = service["service"]["id"]  # type: ignore[index]
        for interface in ("public", "internal", "admin"):
            endpoint = {"service_id": service_id, "interface": interface, "region_id": REGION}
            endpoint["url"] = f"http://{HOST}:{layout.ports[name]}{path}"
            post("/endpoints", {"endpoint": endpoint}, f"the {interface} endpoint of {name}")
    project = post("/projects", {"project": {"name": "service", "domain_id": "default"}}, "project service")
    project_id = project["project"]["id"]  # type: ignore[index]
    roles = api.expect(api.request("GET", f"{auth_url}/roles", token=token), "the roles", 200)["roles"]
    role_ids = {role["name"]: role["id"] for role in roles}
    for wanted in ("admin", "service"):
        if wanted not in role_ids:
            role_ids[wanted] = post("/roles", {"role": {"name": wanted}}, f"role {wanted}")["role"]["id"]  # type: ignore[index]
    for name in SERVICE_USERS:
        user = {"name": name, "password": service_password, "domain_id": "default", "enabled": True}
        user_id = post("/users", {"user": user}, f"user {name}")["user"]["id"]  # type: ignore[index]
        for role in ("admin", "service"):
            answer = api.request(
                "PUT", f"{auth_url}/projects/{project_id}/users/{user_id}/roles/{role_ids[role]}", token=token
            )
            api.expect(answer, f"role {role} for {name}", 204)
