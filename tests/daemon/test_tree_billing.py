"""The actor tree starts a period closer per configured cloud when a price list names the billing."""

from __future__ import annotations

from pathlib import Path

import yaml

from tally.config import Settings
from tally.daemon._tree import build_tree
from tally.http import Readiness


def _names(tmp_path: Path, **settings: object) -> list[str]:
    config = tmp_path / "clouds.yaml"
    clouds = [
        {"cloud": name, "platform": "openstack", "adapter": "openstack", "adapter_config": {"os_cloud": "x"}}
        for name in ("os-b", "os-a")
    ]
    config.write_text(yaml.safe_dump({"clouds": clouds}))
    values = {"state_dir": tmp_path / "state", "reporting_clouds_config": config, **settings}
    return [child.name for child in build_tree(Settings(**values), Readiness())]  # type: ignore[arg-type]


def test_a_period_closer_per_cloud_with_a_price_list(tmp_path: Path) -> None:
    names = _names(tmp_path, billing_price_list="public-eu")
    assert names[-4:] == [
        "sync-scheduler:os-a",
        "sync-scheduler:os-b",
        "period-closer:os-a",
        "period-closer:os-b",
    ]
    assert not any(n.startswith("period-closer") for n in _names(tmp_path))
