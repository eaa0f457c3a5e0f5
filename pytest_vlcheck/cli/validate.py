"""``vlcheck validate PATH...``: load checklists without pytest and report FILE:LINE errors.

Every problem of a file is reported, not only the first; ``--images`` also opens every image
file (and cuts its crop) the way a run would, so a missing or broken image is found before a
model is loaded.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_vlcheck import bounds, fmt
from pytest_vlcheck.checklist import Checklist, ChecklistError, is_checklist_file, load_checklist
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.images.loading import ImageLoader, set_max_image_pixels
from pytest_vlcheck.images.refs import ImageKey, ImageUnavailable
from pytest_vlcheck.tasks import get_task


def add_validate_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check checklist files and print what they hold",
        description="Load every checklist (files, or folders searched for YAML files opening "
        "with 'vlcheck:') and report every FILE:LINE error; no model is loaded.",
        **with_examples(
            "vlcheck validate checklists/", "vlcheck validate my.yaml --max-image-pixels 50000000"
        ),
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument(
        "--image-root",
        type=Path,
        default=None,
        help="resolve image paths here (like --vl-image-root)",
    )
    parser.add_argument(
        "--images",
        action="store_true",
        default=False,
        help="also check that every image file exists and decodes, and that its crop "
        "overlaps it (URL and scene images are not opened)",
    )
    parser.add_argument(
        "--max-image-pixels",
        type=bounds.argument(bounds.whole_number, 1, bounds.MAX_IMAGE_PIXELS),
        default=None,
        metavar="N",
        help="with --images: decode images up to N pixels (like --vl-max-image-pixels)",
    )
    parser.set_defaults(handler=_validate)


def _checklist_paths(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.y*ml")) if is_checklist_file(p))
        else:
            yield path


def _validate(args: argparse.Namespace) -> int:
    missing = [str(path) for path in args.paths if not path.exists()]
    if missing:  # an input it cannot use: a usage error (2), not a problem found in a file (1)
        print(
            f"vlcheck validate: {', '.join(missing)}: no such file or folder; expected "
            "checklist files or folders holding them",
            file=sys.stderr,
        )
        return 2
    if args.max_image_pixels is not None:
        set_max_image_pixels(args.max_image_pixels)
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
        summary = (
            f"{path}: {fmt.plural(len(checklist.tests), 'test')}, {fmt.plural(examples, 'example')}"
        )
        if args.images:
            problems, checked = image_problems(checklist)
            for problem in problems:
                print(problem, file=sys.stderr)
            failures += bool(problems)
            summary += f", {checked} image files checked, {len(problems)} unusable"
        print(summary)
    if not found:
        print("vlcheck validate: no checklist files found", file=sys.stderr)
        return 2
    return 1 if failures else 0


def image_problems(checklist: Checklist) -> tuple[list[str], int]:
    """``FILE:LINE: IMAGE: reason`` for each image file (with its crop) of ``checklist`` that a
    run could not use, at its first use; and how many distinct ones were checked.

    Pillow warns (``DecompressionBombWarning``) on opening an image between the pixel limit
    and twice it; the loader then refuses that image with its own reason, which is what the
    user sees, so the warning is silenced rather than printed as a Python warning too.
    """
    from PIL.Image import DecompressionBombWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecompressionBombWarning)
        return _image_problems(checklist)


def _image_problems(checklist: Checklist) -> tuple[list[str], int]:
    load = ImageLoader()
    checked: set[ImageKey] = set()
    problems: list[str] = []
    for test in checklist.tests:
        task = get_task(test.task)
        where = test.examples_file or test.file
        for example in test.examples:
            for ref in task.grid(example)[0]:
                if ref.kind != "file" or ref.key in checked:
                    continue
                checked.add(ref.key)
                try:
                    load(ref)
                except ImageUnavailable as exc:
                    problems.append(f"{where}:{example.line}: {ref.describe()}: {exc.reason}")
    return problems, len(checked)
