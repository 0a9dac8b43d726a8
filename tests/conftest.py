"""Shared fixtures. Slow end-to-end builds are made once per session and shared."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
