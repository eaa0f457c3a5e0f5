"""``vlcheck baseline prune FILE --root DIR``: drop entries of tests that no longer exist.

Baseline keys are checklist paths relative to pytest's rootdir plus test ids; a deleted file or
a renamed test leaves entries no run will ever gate again. ``prune`` lists them and rewrites
the baseline without them (atomically); ``--dry-run`` only lists.

Entries of Python test modules (``vl_model`` tests) are kept while their module exists: their
test keys come from running the module, not from reading it. A root under which none of the
baseline's files exists is refused rather than taken as "everything was deleted".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path, PurePosixPath

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.checklist.bundled import PREFIX, from_report_name
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.gates.baseline import Baseline, BaselineError

__all__ = [
    "RootMismatch",
    "add_baseline_command",
    "check_root",
    "existing_tests",
    "is_python_test",
]


class RootMismatch(Exception):
    """None of the baseline's rootdir-relative files exists under the given root."""


def add_baseline_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "baseline", help="maintain baseline files", description="Maintain baseline files."
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="drop entries of tests that no longer exist",
        description="List the entries whose checklist file or test id no longer exists under "
        "--root (pytest's rootdir) and rewrite FILE without them. Entries of Python test "
        "files are kept while the file exists.",
        **with_examples(
            "vlcheck baseline prune baseline.json", "vlcheck baseline prune ci/base.json --root ."
        ),
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


def is_python_test(file: str) -> bool:
    """Whether a baseline ``file`` is a Python test module rather than a checklist."""
    return PurePosixPath(file).suffix == ".py"


def _resolved(baseline: Baseline, root: Path) -> dict[str, Path]:
    """Each file the baseline names, as a path (``bundled:`` names in the bundled folder).

    Raises FileNotFoundError when the bundled checklists cannot be found (a broken install).
    """
    return {
        file: from_report_name(file, root) for file in sorted({e.file for e in baseline.entries})
    }


def check_root(baseline: Baseline, root: Path) -> None:
    """Raise RootMismatch when none of the baseline's rootdir-relative files is under ``root``.

    That is a wrong ``--root`` (or the wrong working folder), not a suite whose every file
    was deleted; pruning would empty the baseline.
    """
    local = {f: p for f, p in _resolved(baseline, root).items() if not f.startswith(PREFIX)}
    if local and not any(path.is_file() for path in local.values()):
        example = next(iter(local.values())).absolute()
        raise RootMismatch(
            f"no file the baseline names exists under {root.absolute()} (looked for "
            f"{len(local)}, e.g. {example}); expected --root to be the rootdir of the pytest "
            "run that saved it; baseline left unchanged"
        )


def existing_tests(baseline: Baseline, root: Path) -> set[tuple[str, str]]:
    """(file, test) pairs of the baseline's files that exist under ``root``.

    A checklist's test ids are read from it. A Python test module's keys are only known by
    running it, so all its entries count as existing while the module does. Raises
    ChecklistError when a checklist exists but does not load: its tests cannot be told apart
    from stale ones, so nothing is pruned.
    """
    existing: set[tuple[str, str]] = set()
    for file, path in _resolved(baseline, root).items():
        if not path.is_file():
            continue
        if is_python_test(file):
            existing |= {(e.file, e.test) for e in baseline.entries if e.file == file}
        else:
            existing |= {(file, test.id) for test in load_checklist(path).tests}
    return existing


def _prune(args: argparse.Namespace) -> int:
    try:
        baseline = Baseline.load(args.file)
        check_root(baseline, args.root)
        existing = existing_tests(baseline, args.root)
    except (BaselineError, ChecklistError, RootMismatch, FileNotFoundError) as exc:
        where = f"{args.file}: " if isinstance(exc, RootMismatch) else ""
        print(f"vlcheck baseline: {where}{exc}", file=sys.stderr)
        return 2
    stale = baseline.stale(existing)
    for e in stale:
        print(f"stale: {e.file}::{e.test}[{e.model}]")
    verb = "would drop" if args.dry_run else "dropped"
    summary = f"{args.file}: {verb} {len(stale)} of {len(baseline.entries)} entries"
    kept = sum(is_python_test(e.file) and (e.file, e.test) in existing for e in baseline.entries)
    if kept:
        noun, its = ("entry", "its file exists") if kept == 1 else ("entries", "their files exist")
        summary += (
            f"; kept {kept} {noun} of Python test files unchecked ({its}; a Python test is "
            "known only by running it)"
        )
    print(summary)
    if stale and not args.dry_run:
        baseline.prune(existing).dump(args.file)
    return 0
