"""The lock files pin what pyproject.toml asks for: every dependency (and, in the dev lock, every test
tool) appears once, at a version its specifier allows, so an install from the lock is the install
pyproject.toml describes. scripts/lock rewrites them; this fails until it has been run."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;]+)")


def pins(lock: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / lock).read_text().splitlines():
        match = PIN.match(line)
        if match:
            name = canonicalize_name(match.group(1))
            assert name not in found, f"{lock} pins {name} twice"
            found[name] = match.group(2)
    return found


def requirements(*, with_test: bool) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = list(project["dependencies"])
    if with_test:
        listed += project["optional-dependencies"]["test"]
    return [Requirement(text) for text in listed]


@pytest.mark.parametrize(
    ("lock", "with_test"), [("requirements.lock", False), ("requirements-dev.lock", True)]
)
def test_the_lock_pins_every_requirement_at_an_allowed_version(lock: str, with_test: bool) -> None:
    pinned = pins(lock)
    for requirement in requirements(with_test=with_test):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{lock} does not pin {requirement.name}: run scripts/lock"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {name}=={pinned[name]}, outside {requirement}: run scripts/lock"
        )


def test_the_runtime_lock_holds_no_test_tool() -> None:
    runtime = pins("requirements.lock")
    only_for_tests = {canonicalize_name(r.name) for r in requirements(with_test=True)} - {
        canonicalize_name(r.name) for r in requirements(with_test=False)
    }
    assert not only_for_tests & runtime.keys() - {"packaging"}, "the daemon's lock pins test tools"


def test_the_install_scripts_and_the_image_install_from_the_locks() -> None:
    assert "-r requirements-dev.lock" in (ROOT / "scripts/_venv.sh").read_text()
    assert "requirements.lock" in (ROOT / "Containerfile").read_text()


def test_the_runtime_lock_pins_the_build_backend() -> None:
    """The image builds Tally with --no-build-isolation from what the lock installed: the backend
    must be in it, at a version pyproject's [build-system] allows."""
    pinned = pins("requirements.lock")
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    for text in build_system["requires"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"requirements.lock does not pin the build backend {name}: run scripts/lock"
        assert requirement.specifier.contains(pinned[name]), (
            f"{name}=={pinned[name]} is outside {requirement}"
        )
    containerfile = (ROOT / "Containerfile").read_text()
    assert "--no-build-isolation" in containerfile and "--no-deps" in containerfile
