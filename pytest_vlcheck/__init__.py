"""pytest-vlcheck: vision-language capability checklists as pytest tests.

The core (``checklist``, ``images``, ``models``, ``engine``, ``metrics``, ``report``, ``run``)
knows nothing of pytest; ``plugin`` wires it into pytest, ``cli`` into the ``vlcheck``
command, and ``evaluate`` (``run.evaluate``) serves Python callers such as training loops.
``evaluate`` and ``Run`` are imported on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {"evaluate": "pytest_vlcheck.run.evaluate", "Run": "pytest_vlcheck.run.outcome"}

__all__ = ["Run", "__version__", "evaluate"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_vlcheck' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
