"""The checklist author's audit: blind baselines, degenerate negatives, duplicates, small slices.

The core works on plain data (``TextChoice``, ``AuditSubject``); ``subject.audit_subject`` is
the one adapter from a loaded ``ChecklistTest``.
"""

from pytest_vlcheck.audit.baselines import BaselineResult, blind_baselines
from pytest_vlcheck.audit.checks import MIN_SLICE, Finding, structural_findings
from pytest_vlcheck.audit.run import TestAudit, audit_test
from pytest_vlcheck.audit.subject import AuditSubject, TextChoice, audit_subject

__all__ = [
    "MIN_SLICE",
    "AuditSubject",
    "BaselineResult",
    "Finding",
    "TestAudit",
    "TextChoice",
    "audit_subject",
    "audit_test",
    "blind_baselines",
    "structural_findings",
]
