"""The public surface of tally.simulator.world: a change here must be deliberate."""

from __future__ import annotations

import tally.simulator
import tally.simulator.world


def test_world_surface() -> None:
    assert sorted(tally.simulator.world.__all__) == sorted(
        [
            "RESOURCE_TYPES",
            "SIZE_FACTS",
            "STATES",
            "TRANSITIONS",
            "WORLD_FORMAT",
            "Draft",
            "Flavor",
            "WorldProject",
            "Resource",
            "ResourceType",
            "Segment",
            "VolumeType",
            "World",
            "WorldBuilder",
            "WorldError",
            "WorldView",
        ]
    )
    for name in tally.simulator.world.__all__:
        assert getattr(tally.simulator.world, name) is not None


def test_the_simulator_reexports_the_same_world_names() -> None:
    for name in (
        "Flavor",
        "WorldProject",
        "Resource",
        "Segment",
        "VolumeType",
        "World",
        "WorldBuilder",
        "WorldError",
    ):
        assert getattr(tally.simulator, name) is getattr(tally.simulator.world, name)
