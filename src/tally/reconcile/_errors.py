"""The reconciliation's errors, in one tree.

::

    SyncError                   base of everything a run raises on purpose
    ├── RunAborted              a failure that says nothing about one resource type: the run
    │                           ends before any type is observed (adapter_config, clouds.yaml,
    │                           keystone, the admin-scope probe)
    └── SizeNamesFailed         the volume type listing failed; no type loses completeness

A failure of one resource type is not an exception: the adapter reports it in
``Observation.errors`` and ``incomplete_types`` so the run goes on with the others.
"""

from __future__ import annotations


class SyncError(Exception):
    """Base of the reconciliation's own errors; ``str()`` is the text stats.errors carries."""


class RunAborted(SyncError):
    """The run cannot observe the cloud at all; nothing may be concluded about any type."""


class SizeNamesFailed(SyncError):
    """The volume types could not be listed; the stored names stay as they are."""
