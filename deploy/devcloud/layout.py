"""Where the development cloud lives: its directories, ports, database names, vhost and admin account.

Everything an operator may need to move is read from the environment once, here, so that a second
cloud (another checkout, a CI lane) can sit beside the first by changing a prefix and a port base:

- ``TALLY_DEVCLOUD_DIR``: the state directory (configs, logs, pids, data); default ``.devcloud/``
  of the checkout.
- ``TALLY_DEVCLOUD_VENV``: the services' virtualenv; default ``.venv-openstack/`` of the checkout.
- ``TALLY_DEVCLOUD_CACHE``: the package cache kept between installs; default
  ``~/.cache/tally-devcloud``.
- ``TALLY_DEVCLOUD_PORT_BASE``: the first of the seven API ports; default 19100.
- ``TALLY_DEVCLOUD_PREFIX``: the prefix of the databases and the name of the RabbitMQ vhost;
  default ``tallydev``.
- ``TALLY_DEVCLOUD_MYSQL`` / ``TALLY_DEVCLOUD_RABBIT``: ``host:port`` of MariaDB (user root, no
  password) and RabbitMQ (guest/guest); defaults 127.0.0.1:3306 and 127.0.0.1:5672.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LOCK = Path(__file__).resolve().parent / "requirements.lock"
HOST = "127.0.0.1"  # every program of the cloud listens here and nowhere else
REGION = "RegionOne"

# The APIs in the order of their ports (base + index), with their catalog type and versioned path.
APIS: tuple[tuple[str, str, str], ...] = (
    ("keystone", "identity", "/v3"),
    ("placement", "placement", ""),
    ("nova", "compute", "/v2.1"),
    ("glance", "image", ""),
    ("neutron", "network", ""),
    ("cinder", "block-storage", "/v3/%(project_id)s"),
    ("octavia", "load-balancer", ""),
)
# Databases, one per service (nova has three).
DATABASES = (
    "keystone",
    "placement",
    "glance",
    "neutron",
    "cinder",
    "octavia",
    "nova_api",
    "nova_cell0",
    "nova",
)


@dataclass(frozen=True)
class Layout:
    """The paths, ports and names of one development cloud."""

    state: Path
    venv: Path
    cache: Path
    port_base: int
    prefix: str
    mysql_host: str
    mysql_port: int
    rabbit_host: str
    rabbit_port: int
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def etc(self) -> Path:
        return self.state / "etc"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def run(self) -> Path:
        return self.state / "run"

    @property
    def data(self) -> Path:
        return self.state / "data"

    @property
    def info_file(self) -> Path:
        """The JSON file a running cloud describes itself in (docs/devcloud.md, "Using it from code")."""
        return self.state / "devcloud.json"

    @property
    def clouds_yaml(self) -> Path:
        return self.state / "clouds.yaml"

    @property
    def vhost(self) -> str:
        return self.prefix

    @property
    def transport_url(self) -> str:
        return f"rabbit://guest:guest@{self.rabbit_host}:{self.rabbit_port}/{self.vhost}"

    def database(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def db_url(self, name: str) -> str:
        return f"mysql+pymysql://root@{self.mysql_host}:{self.mysql_port}/{self.database(name)}?charset=utf8"

    def url(self, service: str) -> str:
        return f"http://{HOST}:{self.ports[service]}"

    def bin(self, program: str) -> str:
        return str(self.venv / "bin" / program)


def _host_port(value: str, what: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{what} must be host:port, not {value!r}")
    return host, int(port)


def from_env(env: dict[str, str] | None = None) -> Layout:
    """The layout the environment asks for; a malformed value raises ValueError naming it."""
    env = dict(os.environ if env is None else env)
    base_text = env.get("TALLY_DEVCLOUD_PORT_BASE", "19100")
    if not base_text.isdigit() or not 1024 <= int(base_text) <= 65535 - len(APIS):
        raise ValueError(f"TALLY_DEVCLOUD_PORT_BASE must be a port from 1024 to {65535 - len(APIS)}")
    prefix = env.get("TALLY_DEVCLOUD_PREFIX", "tallydev")
    if not re.fullmatch(r"[a-z][a-z0-9]{0,23}", prefix):
        raise ValueError(f"TALLY_DEVCLOUD_PREFIX must be 1-24 lower-case letters and digits, not {prefix!r}")
    mysql = _host_port(env.get("TALLY_DEVCLOUD_MYSQL", "127.0.0.1:3306"), "TALLY_DEVCLOUD_MYSQL")
    rabbit = _host_port(env.get("TALLY_DEVCLOUD_RABBIT", "127.0.0.1:5672"), "TALLY_DEVCLOUD_RABBIT")
    base = int(base_text)
    home = Path(env.get("HOME", "/root"))
    return Layout(
        state=Path(env.get("TALLY_DEVCLOUD_DIR", REPO / ".devcloud")).resolve(),
        venv=Path(env.get("TALLY_DEVCLOUD_VENV", REPO / ".venv-openstack")).resolve(),
        cache=Path(env.get("TALLY_DEVCLOUD_CACHE", home / ".cache" / "tally-devcloud")).resolve(),
        port_base=base,
        prefix=prefix,
        mysql_host=mysql[0],
        mysql_port=mysql[1],
        rabbit_host=rabbit[0],
        rabbit_port=rabbit[1],
        ports={name: base + index for index, (name, _, _) in enumerate(APIS)},
    )
