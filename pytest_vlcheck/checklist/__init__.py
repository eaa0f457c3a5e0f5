"""Checklists: YAML files of capability tests, loaded into typed objects with FILE:LINE errors.

The names below are resolved on first use, so that the task kinds can import the parsing
helpers of this package while the loader imports the task kinds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_vlcheck.lazy import lazy_exports

if TYPE_CHECKING:  # the names as mypy sees them (``_EXPORTS`` resolves them at run time)
    from pytest_vlcheck.checklist.loader import is_checklist_file as is_checklist_file
    from pytest_vlcheck.checklist.loader import load_checklist as load_checklist
    from pytest_vlcheck.checklist.schema import Checklist as Checklist
    from pytest_vlcheck.checklist.schema import ChecklistTest as ChecklistTest
    from pytest_vlcheck.parsing.errors import ChecklistError as ChecklistError

_EXPORTS = {
    "Checklist": "pytest_vlcheck.checklist.schema",
    "ChecklistTest": "pytest_vlcheck.checklist.schema",
    "ChecklistError": "pytest_vlcheck.parsing.errors",
    "is_checklist_file": "pytest_vlcheck.checklist.loader",
    "load_checklist": "pytest_vlcheck.checklist.loader",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
