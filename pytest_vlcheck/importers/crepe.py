"""CREPE productivity (Ma et al. 2023): ``prod_vg_hard_negs_{atom,swap,negate}_complexity_N.csv``,
rows of ``image_id, x, y, width, height, caption, hard_negs`` (``hard_negs`` a Python-literal
list of captions, read with ``ast.literal_eval``).

One ``caption`` test per negative type, the complexities of its files as the ``complexity``
slice. The image is Visual Genome's ``{image_id}.jpg`` cropped to the row's box (pixels), as
CREPE's script crops it. CREPE's figure is recall@1 of the caption among itself and its hard
negatives, the caption ranked first among ties: the tests say ``ties: first``.
"""

from __future__ import annotations

import argparse
import ast
import math
import re
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    note,
    note_unwinnable,
    read_csv,
    text_field,
)

TYPES = {"atom": "productivity/atom", "swap": "productivity/swap", "negate": "productivity/negate"}
"""CREPE's hard-negative types (in the paper's order) -> capabilities."""
_FILE_NAME = re.compile(r"prod_vg_hard_negs_(atom|swap|negate)_complexity_(\d+)\.csv")
_BOX = ("x", "y", "width", "height")
AUTHORS_NEGATIVES = 5
"""CREPE's script slices six texts per image: the caption and five hard negatives."""


def add_arguments(parser: Any) -> None:
    """CREPE has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per hard-negative type, its files in complexity order."""
    files: dict[str, dict[int, Path]] = {}
    for path in files_under(sources, (".csv",)):
        match = _FILE_NAME.fullmatch(path.name)
        if match is None:
            raise SourceError(
                path,
                "not a CREPE productivity file; expected a name like "
                "prod_vg_hard_negs_swap_complexity_4.csv",
            )
        kind, complexity = match.group(1), int(match.group(2))
        if complexity in files.setdefault(kind, {}):
            raise SourceError(path, f"{kind} complexity {complexity} given twice")
        files[kind][complexity] = path
    tests = []
    for kind in (k for k in TYPES if k in files):
        examples = []
        for complexity in sorted(files[kind]):
            examples += _examples(files[kind][complexity], complexity)
        test = make_test(
            f"crepe-{kind}",
            TYPES[kind],
            "caption",
            examples,
            threshold=args.threshold,
            description=f"CREPE productivity ({kind} hard negatives): the caption must rank "
            "first on the cropped image",
        )
        tests.append({**test, "ties": "first"})  # CREPE ranks the caption first among ties
    return [
        (
            None,
            checklist(
                "CREPE productivity (Ma et al. 2023): captions of growing complexity against "
                "atom, swap and negation hard negatives.",
                tests,
            ),
        )
    ]


def _examples(path: Path, complexity: int) -> list[dict[str, Any]]:
    examples = []
    other_counts = 0
    for position, (line, row) in enumerate(read_csv(path)):
        image_id = text_field(path, row, "image_id", None, line=line).strip()
        negatives = _hard_negatives(path, row, line)
        other_counts += len(negatives) != AUTHORS_NEGATIVES
        examples.append(
            {
                "id": f"{complexity}-{position}",
                "image": {"path": f"{image_id}.jpg", "crop": _box(path, row, line)},
                "caption": text_field(path, row, "caption", None, line=line),
                "negatives": negatives,
                "tags": {"complexity": str(complexity)},
            }
        )
    if not examples:
        raise SourceError(path, "no rows under the header")
    note_unwinnable(path, examples)
    if other_counts:
        note(
            f"{path}: {other_counts} row(s) without exactly {AUTHORS_NEGATIVES} hard negatives; "
            "CREPE's script assumes six texts per image, so its figure for this file is not "
            "comparable"
        )
    return examples


def _box(path: Path, row: dict[str, str], line: int) -> list[float]:
    """The crop box ``[x, y, width, height]`` in pixels: finite, inside the image's corner,
    not empty."""
    box = []
    for key in _BOX:
        text = text_field(path, row, key, None, line=line)
        try:
            value = float(text)
        except ValueError:
            raise SourceError(path, f"'{key}' must be a number, got {text!r}", line=line) from None
        if not math.isfinite(value) or value < 0:
            raise SourceError(
                path, f"'{key}' must be a finite number >= 0, got {text!r}", line=line
            )
        box.append(value)
    if box[2] == 0 or box[3] == 0:
        raise SourceError(path, "the box is empty (width or height 0)", line=line)
    return box


def _hard_negatives(path: Path, row: dict[str, str], line: int) -> list[str]:
    """``hard_negs``: a Python list literal of non-empty captions (never ``eval``)."""
    text = text_field(path, row, "hard_negs", None, line=line)
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise SourceError(
            path, f"'hard_negs' is not a Python list literal: {text[:60]!r}", line=line
        ) from None
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise SourceError(
            path, f"'hard_negs' must list one or more captions, got {text[:60]!r}", line=line
        )
    return list(value)


IMPORTER = Importer(
    "crepe",
    "CREPE's productivity CSVs (one test per negative type, slices by complexity, cropped)",
    add_arguments,
    convert,
)
