"""Checklists: YAML files of capability tests, loaded into typed objects with FILE:LINE errors.

The names below are resolved on first use, so that the task kinds can import the parsing
helpers of this package while the loader imports the task kinds.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Checklist": "pytest_vlcheck.checklist.schema",
    "ChecklistTest": "pytest_vlcheck.checklist.schema",
    "ChecklistError": "pytest_vlcheck.parsing.errors",
    "is_checklist_file": "pytest_vlcheck.checklist.loader",
    "load_checklist": "pytest_vlcheck.checklist.loader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_vlcheck.checklist' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
