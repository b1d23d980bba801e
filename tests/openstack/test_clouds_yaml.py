"""clouds.yaml resolution, rule by rule (seed 000, "Where the credentials come from")."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from tally.openstack import resolve_cloud
from tally.openstack.internals import clouds_yaml_locations, find_clouds_yaml, warn_if_unpinned
from tally.reconcile import RunAborted


def write(path: Path, clouds: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"clouds": clouds}))
    return path


def entry(url: str = "https://keystone.example/v3", **extra: object) -> dict[str, object]:
    return {
        "auth_type": "password",
        "auth": {"auth_url": url, "username": "u", "password": "p", "project_name": "admin"},
        "region_name": "RegionOne",
        "interface": "public",
        **extra,
    }


def test_clouds_yaml_locations_in_order(tmp_path: Path) -> None:
    env = {"HOME": "/home/op"}
    assert clouds_yaml_locations(env, tmp_path) == [
        tmp_path / "clouds.yaml",
        Path("/home/op/.config/openstack/clouds.yaml"),
        Path("/etc/openstack/clouds.yaml"),
    ]
    env["XDG_CONFIG_HOME"] = "/xdg"
    assert clouds_yaml_locations(env, tmp_path)[1] == Path("/xdg/openstack/clouds.yaml")


def test_os_client_config_file_is_the_only_location_searched(tmp_path: Path) -> None:
    write(tmp_path / "cwd" / "clouds.yaml", {"c": entry()})
    pinned = tmp_path / "mounted" / "clouds.yaml"
    env = {"OS_CLIENT_CONFIG_FILE": str(pinned), "HOME": str(tmp_path)}
    with pytest.raises(RunAborted, match=f"no clouds.yaml found; searched {pinned}$"):
        find_clouds_yaml(env, tmp_path / "cwd")
    write(pinned, {"c": entry("https://mounted/v3")})
    assert resolve_cloud("c", env=env, cwd=tmp_path / "cwd").auth["auth_url"] == "https://mounted/v3"


def test_first_found_wins_working_directory_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "openstack" / "clouds.yaml", {"c": entry("https://home/v3")})
    env = {"HOME": str(home)}
    assert resolve_cloud("c", env=env, cwd=tmp_path).auth["auth_url"] == "https://home/v3"
    write(tmp_path / "clouds.yaml", {"c": entry("https://cwd/v3")})
    assert resolve_cloud("c", env=env, cwd=tmp_path).auth["auth_url"] == "https://cwd/v3"


def test_no_clouds_yaml_names_every_location(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "nohome"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    with pytest.raises(RunAborted) as caught:
        find_clouds_yaml(env, tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "clouds.yaml") in message
    assert str(tmp_path / "xdg" / "openstack" / "clouds.yaml") in message
    assert "/etc/openstack/clouds.yaml" in message


def test_secure_yaml_beside_it_is_merged_over_it(tmp_path: Path) -> None:
    main = entry()
    main["auth"] = {"auth_url": "https://k/v3", "application_credential_id": "abc"}
    main["auth_type"] = "v3applicationcredential"
    path = write(tmp_path / "etc" / "clouds.yaml", {"c": main})
    write(tmp_path / "etc" / "secure.yaml", {"c": {"auth": {"application_credential_secret": "s3"}}})
    write(tmp_path / "elsewhere" / "secure.yaml", {"c": {"auth": {"application_credential_secret": "wrong"}}})
    resolved = resolve_cloud("c", env={"OS_CLIENT_CONFIG_FILE": str(path)}, cwd=tmp_path / "elsewhere")
    assert resolved.auth["application_credential_secret"] == "s3"
    assert resolved.auth["application_credential_id"] == "abc"


def test_os_region_name_and_os_interface_override_every_entry(tmp_path: Path) -> None:
    path = write(
        tmp_path / "clouds.yaml",
        {"a": entry(regions=["RegionOne", "RegionTwo"]), "b": entry(regions=["RegionOne", "RegionTwo"])},
    )
    env = {"OS_CLIENT_CONFIG_FILE": str(path), "OS_REGION_NAME": "RegionTwo", "OS_INTERFACE": "internal"}
    for name in ("a", "b"):
        resolved = resolve_cloud(name, env=env)
        assert resolved.region_name == "RegionTwo"
        assert resolved.interface == "internal"


def test_os_cloud_and_other_os_variables_do_not_reach_the_parse(tmp_path: Path) -> None:
    path = write(tmp_path / "clouds.yaml", {"a": entry("https://a/v3"), "b": entry("https://b/v3")})
    env = {
        "OS_CLIENT_CONFIG_FILE": str(path),
        "OS_CLOUD": "b",
        "OS_AUTH_URL": "https://env/v3",
        "OS_PASSWORD": "x",
    }
    resolved = resolve_cloud("a", env=env)
    assert resolved.auth["auth_url"] == "https://a/v3"
    assert resolved.auth["password"] == "p"


def test_an_unknown_entry_is_refused_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path / "clouds.yaml", {"a": entry()})
    with pytest.raises(RunAborted, match=r'resolving the clouds\.yaml entry "zz"'):
        resolve_cloud("zz", env={"OS_CLIENT_CONFIG_FILE": str(path)})


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("secure.yaml", "clouds: [\n", "while parsing a flow node"),
        ("clouds-public.yaml", "public-clouds: 3\n", "holds no public-clouds mapping"),
    ],
)
def test_a_broken_file_beside_it_is_named_in_the_refusal(
    tmp_path: Path, name: str, text: str, reason: str
) -> None:
    path = write(tmp_path / "clouds.yaml", {"a": entry()})
    (tmp_path / name).write_text(text)
    with pytest.raises(RunAborted) as caught:
        resolve_cloud("a", env={"OS_CLIENT_CONFIG_FILE": str(path)})
    message = str(caught.value)
    # The file at fault is named, not only the clouds.yaml the entry was looked up in.
    assert message.startswith(f'resolving the clouds.yaml entry "a" in {path}: {tmp_path / name}'), message
    assert reason in message and "\n" not in message


def test_warn_if_unpinned(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert warn_if_unpinned({}) is True
    assert "OS_CLIENT_CONFIG_FILE is unset" in caplog.text
    assert warn_if_unpinned({"OS_CLIENT_CONFIG_FILE": "/etc/openstack/clouds.yaml"}) is False
