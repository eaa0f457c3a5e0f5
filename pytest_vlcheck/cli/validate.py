"""``vlcheck validate PATH...``: load checklists without pytest and report FILE:LINE errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_vlcheck.checklist import ChecklistError, is_checklist_file, load_checklist


def add_validate_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check checklist files and print what they hold",
        description="Load every checklist (files, or folders searched for YAML files opening "
        "with 'vlcheck:') and report FILE:LINE errors; no model is loaded.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument(
        "--image-root",
        type=Path,
        default=None,
        help="resolve image paths here (like --vl-image-root)",
    )
    parser.set_defaults(handler=_validate)


def _checklist_paths(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.y*ml")) if is_checklist_file(p))
        else:
            yield path


def _validate(args: argparse.Namespace) -> int:
    failures = 0
    found = 0
    for path in _checklist_paths(args.paths):
        found += 1
        try:
            checklist = load_checklist(path, image_root=args.image_root)
        except ChecklistError as exc:
            print(exc, file=sys.stderr)
            failures += 1
            continue
        examples = sum(len(test.examples) for test in checklist.tests)
        print(f"{path}: {len(checklist.tests)} tests, {examples} examples")
    if not found:
        print("vlcheck validate: no checklist files found", file=sys.stderr)
        return 2
    return 1 if failures else 0
