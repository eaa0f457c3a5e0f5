"""Checklists: YAML files of capability tests, loaded into typed objects with FILE:LINE errors."""

from pytest_vlcheck.checklist.errors import ChecklistError
from pytest_vlcheck.checklist.loader import is_checklist_file, load_checklist
from pytest_vlcheck.checklist.schema import Checklist, ChecklistTest, Example

__all__ = [
    "Checklist",
    "ChecklistError",
    "ChecklistTest",
    "Example",
    "is_checklist_file",
    "load_checklist",
]
