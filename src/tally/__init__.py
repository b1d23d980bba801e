"""Tally: the usage record of an OpenStack cloud that a provider can bill from."""

__version__ = "0.1.0"
