"""Daemon tests run on asyncio only: Quart, and so the HTTP front end, is built on asyncio.

The repository root goes on the path so that ``bench`` (not an installed package) is importable: the
store restart test runs its daemon with ``bench.replica_nodes``' settings and fake cloud.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
