"""The keystone-token policy: its defaults, an operator's policy.yaml over them, files refused at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tally.http import PolicyFileError
from tally.http._policy import ROUTE_RULES, default_rules, sample_yaml
from tally.http.internals import TallyPolicy

READER = {"roles": ["reader"], "project_id": "p1"}
MEMBER = {"roles": ["member", "reader"], "project_id": "p1"}
ADMIN = {"roles": ["admin", "member", "reader"], "project_id": "svc"}
SERVICE = {"roles": ["service"], "project_id": "svc"}
DOMAIN_READER = {"roles": ["reader"], "domain_id": "d1"}
OBSERVER = {"roles": ["observer"], "project_id": "p1"}


def own(creds: dict[str, object]) -> dict[str, object]:
    return {k: creds[k] for k in ("project_id", "domain_id") if k in creds}


@pytest.mark.parametrize(
    ("creds", "read_all", "read_domain", "read_project"),
    [
        (READER, False, False, True),
        (MEMBER, False, False, True),
        (ADMIN, True, False, True),
        (SERVICE, True, False, False),
        (DOMAIN_READER, False, True, False),
        (OBSERVER, False, False, False),
    ],
)
def test_the_default_rules_read_as_the_issue_states(
    creds: dict[str, object], read_all: bool, read_domain: bool, read_project: bool
) -> None:
    policy = TallyPolicy()
    target = own(creds)
    assert policy.allows("tally:read:all", creds, target) is read_all
    assert policy.allows("tally:read:domain", creds, target) is read_domain
    assert policy.allows("tally:read:project", creds, target) is read_project
    for rule, _ in ROUTE_RULES.values():
        assert policy.allows(rule, creds, target) is (read_all or read_domain or read_project)


def test_a_project_rule_never_matches_another_project() -> None:
    assert not TallyPolicy().allows("tally:read:project", READER, {"project_id": "p2"})


def test_an_operators_file_overrides_a_default(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        '"admin_or_service": "role:admin or role:auditor"\n"tally:events:list": "rule:admin_or_service"\n'
    )
    policy = TallyPolicy(path)
    auditor = {"roles": ["auditor"], "project_id": "x"}
    assert policy.allows("tally:read:all", auditor, own(auditor))
    assert not policy.allows("tally:read:all", SERVICE, own(SERVICE))
    assert not policy.allows("tally:events:list", READER, own(READER))
    assert policy.allows("tally:usage:get", READER, own(READER))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('"tally:read:al": "role:admin"\n', "'tally:read:al'"),
        ('"tally:read:all": "role:admin or ("\n', "'tally:read:all'"),
        ('"tally:read:all": "rule:nowhere"\n', "'nowhere'"),
        ('"tally:read:all": [1]\n', "'tally:read:all'"),
        ("- a list\n", "must map rule names"),
        ('"tally:read:all": "x\n', "cannot be read as YAML"),
    ],
)
def test_a_file_that_cannot_be_used_is_refused_in_one_line_naming_it(
    tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyFileError) as refused:
        TallyPolicy(path)
    message = str(refused.value)
    assert message.startswith(str(path)) and named in message
    assert "\n" not in message


def test_the_sample_lists_every_rule_commented_out_and_loads_as_the_defaults(tmp_path: Path) -> None:
    sample = sample_yaml()
    for rule in default_rules():
        assert f'#"{rule.name}": "{rule.check_str}"' in sample
    uncommented = "\n".join(line[1:] for line in sample.splitlines() if line.startswith('#"'))
    path = tmp_path / "policy.yaml"
    path.write_text(uncommented)
    assert yaml.safe_load(uncommented) == {r.name: r.check_str for r in default_rules()}
    assert TallyPolicy(path).allows("tally:read:project", READER, own(READER))


def test_the_cli_prints_the_defaults_and_the_daemon_refuses_a_bad_file(tmp_path: Path) -> None:
    tally = [sys.executable, "-m", "tally"]
    printed = subprocess.run([*tally, "policy-defaults"], capture_output=True, text=True, check=True)
    assert printed.stdout.strip() == sample_yaml().strip()
    bad = tmp_path / "policy.yaml"
    bad.write_text('"tally:nope": "@"\n')
    env = {**os.environ, "TALLY_REPORTING_POLICY_FILE": str(bad)}
    ran = subprocess.run([*tally, "run"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert ran.returncode == 2
    assert ran.stderr.strip() == f"tally: {bad}: unknown rule 'tally:nope' (tally policy-defaults lists them)"


def test_the_daemon_refuses_a_keystone_entry_clouds_yaml_lacks(tmp_path: Path) -> None:
    clouds = tmp_path / "tally-clouds.yaml"
    clouds.write_text(
        "clouds:\n  - {cloud: os-x, platform: openstack, adapter: openstack, adapter_config: {os_cloud: a},"
        " keystone: {os_cloud: tally-service}}\n"
    )
    clouds_yaml = tmp_path / "clouds.yaml"
    clouds_yaml.write_text("clouds: {a: {auth: {auth_url: 'http://127.0.0.1:9/v3'}}}\n")
    env = {
        **os.environ,
        "TALLY_REPORTING_CLOUDS_CONFIG": str(clouds),
        "OS_CLIENT_CONFIG_FILE": str(clouds_yaml),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "tally", "run"], capture_output=True, text=True, env=env, timeout=60
    )
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("tally: ") and "tally-service" in line
