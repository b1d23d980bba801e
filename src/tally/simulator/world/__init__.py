"""The simulated world: what a cloud holds, and how each resource changes, over one period.

A :class:`World` is plain data: the cloud, the period, the projects, the flavors and volume
types, and the resources of the five types Tally meters, each with a timeline of
:class:`Segment` spans. The same world feeds three readers, which is why it is data and not
behaviour: the fake OpenStack API answers listings from it at an instant, the month generator
writes it, and the notifications and the oracle are derived from it.

One module per concern, arrows pointing down the list:

- ``_model``: the parts (:class:`WorldProject`, :class:`Flavor`, :class:`VolumeType`,
  :class:`Segment`, :class:`Resource`) and a resource's facts at an instant;
- ``_rules``: the states, transition markers and size facts each type may carry, and the
  checks that raise :class:`WorldError`;
- ``_world``: :class:`World` (checked, indexed for lookups and paging), :class:`WorldView`
  (the listings at one instant) and the world's JSON document (``to_json`` / ``from_json``);
- ``_builder``: :class:`WorldBuilder` and :class:`Draft`, building a world by hand.
"""

from ._builder import Draft as Draft
from ._builder import WorldBuilder as WorldBuilder
from ._model import RESOURCE_TYPES as RESOURCE_TYPES
from ._model import Flavor as Flavor
from ._model import Resource as Resource
from ._model import ResourceType as ResourceType
from ._model import Segment as Segment
from ._model import VolumeType as VolumeType
from ._model import WorldProject as WorldProject
from ._rules import SIZE_FACTS as SIZE_FACTS
from ._rules import STATES as STATES
from ._rules import TRANSITIONS as TRANSITIONS
from ._rules import WorldError as WorldError
from ._world import WORLD_FORMAT as WORLD_FORMAT
from ._world import World as World
from ._world import WorldView as WorldView

__all__ = [
    "RESOURCE_TYPES",
    "SIZE_FACTS",
    "STATES",
    "TRANSITIONS",
    "WORLD_FORMAT",
    "Draft",
    "Flavor",
    "Resource",
    "ResourceType",
    "Segment",
    "VolumeType",
    "World",
    "WorldBuilder",
    "WorldError",
    "WorldProject",
    "WorldView",
]
