"""pytest run in a subprocess from the repository root, as a user of a clone would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def repo_pytest(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p no:cacheprovider ARGS`` in the repository root (10 min at most)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
