"""The benchmarks' pure parts are tested here: the repository root on the path makes ``bench`` importable
(it is not an installed package)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
