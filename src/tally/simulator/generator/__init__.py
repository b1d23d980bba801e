"""The month generator: a seeded simulated month of a cloud (world, notifications, oracle)."""

from .._streams import GeneratorError as GeneratorError
from .._streams import parse_period as parse_period
from ._month import Month as Month
from ._month import TenantInfo as TenantInfo
from ._month import generate_month as generate_month
from ._month import generate_world as generate_world

__all__ = ["GeneratorError", "Month", "TenantInfo", "generate_month", "generate_world", "parse_period"]
