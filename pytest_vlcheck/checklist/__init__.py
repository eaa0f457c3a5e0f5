"""Checklists: YAML files of capability tests, loaded into typed objects with FILE:LINE errors.

The names below are resolved on first use, so that the task kinds can import the parsing
helpers of this package while the loader imports the task kinds.
"""

from __future__ import annotations

from pytest_vlcheck.lazy import lazy_exports

_EXPORTS = {
    "Checklist": "pytest_vlcheck.checklist.schema",
    "ChecklistTest": "pytest_vlcheck.checklist.schema",
    "ChecklistError": "pytest_vlcheck.parsing.errors",
    "is_checklist_file": "pytest_vlcheck.checklist.loader",
    "load_checklist": "pytest_vlcheck.checklist.loader",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
