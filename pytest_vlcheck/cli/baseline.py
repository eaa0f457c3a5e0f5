"""``vlcheck baseline prune FILE --root DIR``: drop entries of tests that no longer exist.

Baseline keys are checklist paths relative to pytest's rootdir plus test ids; a deleted file or
a renamed test leaves entries no run will ever gate again. ``prune`` lists them and rewrites
the baseline without them (atomically); ``--dry-run`` only lists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_vlcheck.bundled import from_report_name
from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.report.baseline import Baseline, BaselineError

__all__ = ["add_baseline_command", "existing_tests"]


def add_baseline_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "baseline", help="maintain baseline files", description="Maintain baseline files."
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="drop entries of tests that no longer exist",
        description="List the entries whose checklist file or test id no longer exists under "
        "--root (pytest's rootdir) and rewrite FILE without them.",
    )
    prune.add_argument("file", type=Path, metavar="FILE", help="a baseline file")
    prune.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the rootdir the entries' paths are relative to (default: .)",
    )
    prune.add_argument("--dry-run", action="store_true", help="list only; leave FILE unchanged")
    prune.set_defaults(handler=_prune)


def existing_tests(baseline: Baseline, root: Path) -> set[tuple[str, str]]:
    """(file, test) pairs of the baseline's checklist files that exist under ``root``.

    Raises ChecklistError when a file exists but does not load: its tests cannot be told
    apart from stale ones, so nothing is pruned.
    """
    existing: set[tuple[str, str]] = set()
    for file in sorted({e.file for e in baseline.entries}):
        path = from_report_name(file, root)
        if path.is_file():
            existing |= {(file, test.id) for test in load_checklist(path).tests}
    return existing


def _prune(args: argparse.Namespace) -> int:
    try:
        baseline = Baseline.load(args.file)
        existing = existing_tests(baseline, args.root)
    except (BaselineError, ChecklistError) as exc:
        print(f"vlcheck baseline: {exc}", file=sys.stderr)
        return 2
    stale = baseline.stale(existing)
    for e in stale:
        print(f"stale: {e.file}::{e.test}[{e.model}]")
    verb = "would drop" if args.dry_run else "dropped"
    print(f"{args.file}: {verb} {len(stale)} of {len(baseline.entries)} entries")
    if stale and not args.dry_run:
        baseline.prune(existing).dump(args.file)
    return 0
