"""The services' configuration files, rendered from the layout and the cloud's two passwords.

What matters for Tally is set in every service alike (``common``): the RabbitMQ vhost of this cloud
as transport, legacy notifications (``messagingv2``) on the ``notifications`` topic, a database pool
capped at two connections plus one overflow (MariaDB's connection limit is shared with the whole
machine), and ``[keystone_authtoken] service_type`` so that keystonemiddleware enforces the access
rules of application credentials. The rest is what each service needs to run without real
infrastructure: nova's fake virt driver, cinder's fake volume driver, octavia's no-op drivers,
neutron's ML2 without mechanism drivers or agents, glance's file store.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .layout import HOST, REGION, Layout

Sections = dict[str, dict[str, str]]


def write_ini(path: Path, sections: Sections) -> None:
    """Write ``sections`` as an INI file (no interpolation: values are written as given)."""
    lines: list[str] = []
    for name, options in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {value}" for key, value in options.items())
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    path.chmod(0o600)


def _auth(layout: Layout, user: str, password: str) -> dict[str, str]:
    return {
        "auth_type": "password",
        "auth_url": f"{layout.url('keystone')}/v3",
        "project_name": "service",
        "project_domain_name": "Default",
        "username": user,
        "user_domain_name": "Default",
        "password": password,
        "region_name": REGION,
    }


def _common(layout: Layout, service: str, service_type: str, password: str, db: str | None) -> Sections:
    sections: Sections = {
        "DEFAULT": {
            "transport_url": layout.transport_url,
            "debug": "false",
            "log_dir": "",
            "use_stderr": "true",
            # A stop waits 10 s before SIGKILL; oslo.service's default grace is 60 s.
            "graceful_shutdown_timeout": "5",
        },
        "oslo_messaging_notifications": {"driver": "messagingv2", "topics": "notifications"},
        "oslo_concurrency": {"lock_path": str(layout.data / service / "locks")},
        "keystone_authtoken": {
            **_auth(layout, service, password),
            "www_authenticate_uri": f"{layout.url('keystone')}/v3",
            "service_type": service_type,
        },
    }
    if db is not None:
        sections["database"] = {
            "connection": layout.db_url(db),
            "max_pool_size": "2",
            "max_overflow": "1",
            "pool_timeout": "60",
        }
    return sections


def keystone(layout: Layout) -> Sections:
    return {
        "DEFAULT": {"debug": "false", "use_stderr": "true", "transport_url": layout.transport_url},
        "database": {"connection": layout.db_url("keystone"), "max_pool_size": "2", "max_overflow": "1"},
        "identity": {"password_hash_rounds": "4"},
        "token": {"provider": "fernet"},
        "fernet_tokens": {"key_repository": str(layout.data / "keystone" / "fernet-keys")},
        "credential": {"key_repository": str(layout.data / "keystone" / "credential-keys")},
        "oslo_messaging_notifications": {"driver": "messagingv2", "topics": "notifications"},
    }


def placement(layout: Layout, password: str) -> Sections:
    sections = _common(layout, "placement", "placement", password, None)
    sections["placement_database"] = {
        "connection": layout.db_url("placement"),
        "max_pool_size": "2",
        "max_overflow": "1",
    }
    sections["api"] = {"auth_strategy": "keystone"}
    return sections


def nova(layout: Layout, password: str, *, with_database: bool) -> Sections:
    """nova.conf of the API, conductor and scheduler; without the databases, nova-compute's own."""
    sections = _common(layout, "nova", "compute", password, "nova" if with_database else None)
    sections["DEFAULT"] |= {
        "compute_driver": "fake.FakeDriver",
        "host": f"{layout.prefix}-compute",
        "my_ip": HOST,
        "state_path": str(layout.data / "nova"),
        "instances_path": str(layout.data / "nova" / "instances"),
        "osapi_compute_workers": "1",
        "instance_usage_audit": "true",
        "instance_usage_audit_period": "hour",
        "heal_instance_info_cache_interval": "-1",
        # One fake compute host: a resize (and its revert) can only land where the server already is.
        "allow_resize_to_same_host": "true",
    }
    if with_database:
        sections["api_database"] = dict(sections["database"], connection=layout.db_url("nova_api"))
    sections["api"] = {"auth_strategy": "keystone"}
    sections["notifications"] = {
        "notification_format": "unversioned",
        "notify_on_state_change": "vm_and_task_state",
    }
    sections["conductor"] = {"workers": "1"}
    sections["scheduler"] = {"workers": "1", "discover_hosts_in_cells_interval": "-1"}
    sections["placement"] = _auth(layout, "nova", password)
    sections["neutron"] = _auth(layout, "nova", password)
    sections["cinder"] = {"os_region_name": REGION}
    sections["glance"] = {"region_name": REGION}
    sections["service_user"] = {**_auth(layout, "nova", password), "send_service_user_token": "true"}
    sections["vnc"] = {"enabled": "false"}
    sections["wsgi"] = {"api_paste_config": str(layout.etc / "nova" / "api-paste.ini")}
    return sections


def glance(layout: Layout, password: str) -> Sections:
    sections = _common(layout, "glance", "image", password, "glance")
    sections["DEFAULT"] |= {"enabled_backends": "fs:file", "workers": "1"}
    sections["glance_store"] = {"default_backend": "fs"}
    sections["fs"] = {"filesystem_store_datadir": str(layout.data / "glance" / "images")}
    sections["os_glance_staging_store"] = {
        "filesystem_store_datadir": str(layout.data / "glance" / "staging")
    }
    sections["os_glance_tasks_store"] = {"filesystem_store_datadir": str(layout.data / "glance" / "tasks")}
    sections["paste_deploy"] = {"flavor": "keystone"}
    return sections


def neutron(layout: Layout, password: str) -> Sections:
    sections = _common(layout, "neutron", "network", password, "neutron")
    sections["DEFAULT"] |= {
        "core_plugin": "ml2",
        "service_plugins": "router",
        "auth_strategy": "keystone",
        "api_workers": "1",
        "rpc_workers": "0",
        "rpc_state_report_workers": "0",
        "notify_nova_on_port_status_changes": "false",
        "notify_nova_on_port_data_changes": "false",
        "api_paste_config": str(layout.etc / "neutron" / "api-paste.ini"),
        "state_path": str(layout.data / "neutron"),
    }
    sections["ml2"] = {
        "type_drivers": "flat,vlan",
        "tenant_network_types": "",
        "mechanism_drivers": "",
        "extension_drivers": "port_security",
    }
    sections["ml2_type_flat"] = {"flat_networks": "*"}
    sections["ml2_type_vlan"] = {"network_vlan_ranges": "physnet1:100:199"}
    return sections


def cinder(layout: Layout, password: str) -> Sections:
    sections = _common(layout, "cinder", "block-storage", password, "cinder")
    sections["DEFAULT"] |= {
        "auth_strategy": "keystone",
        "host": f"{layout.prefix}-volume",
        "enabled_backends": "fake",
        "state_path": str(layout.data / "cinder"),
        "scheduler_driver_init_wait_time": "5",
        "api_paste_config": str(layout.etc / "cinder" / "api-paste.ini"),
        "osapi_volume_workers": "1",
        # The backend's capabilities reach a scheduler that missed its start-up fanout on the next
        # stats period: every 10 s from the start instead of every 60 s after a random delay of up
        # to 60, so a start does not wait a minute or two for them.
        "backend_stats_polling_interval": "10",
        "periodic_interval": "10",
        "periodic_fuzzy_delay": "0",
    }
    sections["fake"] = {
        "volume_driver": "cinder.tests.fake_driver.FakeLoggingVolumeDriver",
        "volume_backend_name": "fake",
    }
    sections["nova"] = _auth(layout, "cinder", password)
    return sections


def octavia(layout: Layout, password: str) -> Sections:
    sections = _common(layout, "octavia", "load-balancer", password, "octavia")
    sections["api_settings"] = {
        "bind_host": HOST,
        "bind_port": str(layout.ports["octavia"]),
        "auth_strategy": "keystone",
        "default_provider_driver": "amphora",
        "enabled_provider_drivers": "amphora:The Octavia Amphora driver.",
    }
    sections["controller_worker"] = {
        "amphora_driver": "amphora_noop_driver",
        "compute_driver": "compute_noop_driver",
        "network_driver": "network_noop_driver",
        "volume_driver": "volume_noop_driver",
        "image_driver": "image_noop_driver",
        "loadbalancer_topology": "SINGLE",
        "client_ca": str(layout.data / "octavia" / "ca.pem"),
        "workers": "1",
    }
    sections["health_manager"] = {"heartbeat_key": "devcloud", "bind_ip": HOST}

    sections["service_auth"] = _auth(layout, "octavia", password)
    sections["oslo_messaging"] = {"topic": "octavia_prov"}
    sections["certificates"] = {
        "ca_certificate": str(layout.data / "octavia" / "ca.pem"),
        "ca_private_key": str(layout.data / "octavia" / "ca.key"),
        "server_certs_key_passphrase": "insecure-key-do-not-use-this-key",
    }
    return sections


def write_all(layout: Layout, service_password: str) -> None:
    """Every configuration file under ``layout.etc``, and the paste files the wheels ship."""
    etc = layout.etc
    write_ini(etc / "keystone" / "keystone.conf", keystone(layout))
    write_ini(etc / "placement" / "placement.conf", placement(layout, service_password))
    write_ini(etc / "nova" / "nova.conf", nova(layout, service_password, with_database=True))
    write_ini(etc / "nova" / "nova-compute.conf", nova(layout, service_password, with_database=False))
    write_ini(etc / "glance" / "glance-api.conf", glance(layout, service_password))
    write_ini(etc / "neutron" / "neutron.conf", neutron(layout, service_password))
    write_ini(etc / "cinder" / "cinder.conf", cinder(layout, service_password))
    write_ini(etc / "octavia" / "octavia.conf", octavia(layout, service_password))
    shipped = layout.venv / "etc"
    for service, name in (
        ("nova", "api-paste.ini"),
        ("neutron", "api-paste.ini"),
        ("glance", "glance-api-paste.ini"),
        ("cinder", "api-paste.ini"),
    ):
        shutil.copyfile(shipped / service / name, etc / service / name)
    for service in ("nova", "glance", "neutron", "cinder", "octavia", "placement"):
        (layout.data / service / "locks").mkdir(parents=True, exist_ok=True)
    for directory in ("images", "staging", "tasks"):
        (layout.data / "glance" / directory).mkdir(parents=True, exist_ok=True)
    (layout.data / "nova" / "instances").mkdir(parents=True, exist_ok=True)
