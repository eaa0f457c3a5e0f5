"""Blind baselines on checklists: how far a scorer gets without the image.

A thin table over ``pytest_vlcheck.audit`` (what ``vlcheck audit`` runs): every text-only
baseline's pass rate per test, each kept from the example it judges (leave-one-out), ties
wrong. Image and match tests have no choice between texts and are listed as such.

Usage: python benchmarks/text_only_baseline.py [CHECKLIST.yaml ...]  (default: the bundled suite)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_vlcheck.audit import audit_subject, audit_test
from pytest_vlcheck.checklist.bundled import bundled_checklists
from pytest_vlcheck.checklist.loader import load_checklist


def main(argv: Sequence[str]) -> int:
    paths = [Path(a) for a in argv] or bundled_checklists()
    header = f"{'file::test':40} {'task':7} {'n':>6} {'chance':>7}  baselines (pass rate)"
    print(header)
    print("-" * len(header))
    for path in paths:
        for test in load_checklist(path).tests:
            audit = audit_test(audit_subject(test))
            name = f"{path.name}::{test.id}"
            if audit.chance is None:
                cells = audit.subject.text_note
                chance = "-"
            else:
                cells = "  ".join(f"{b.name}={b.rate:.3f}" for b in audit.baselines)
                chance = f"{audit.chance:.3f}"
            flag = "  <-- flagged" if audit.flagged else ""
            print(f"{name:40} {test.task:7} {len(test.examples):6d} {chance:>7}  {cells}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
