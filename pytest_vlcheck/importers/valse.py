"""VALSE (Parcalabescu et al. 2022): eleven JSON pieces, each a mapping id -> {dataset,
image_file, caption, foil, mturk {caption, foil, other}, ...}.

One ``caption`` test per file (id = the file's stem): the caption must score strictly above
its foil, VALSE's pairwise accuracy. By default only the authors' valid set is kept (at
least two of the three annotators chose the caption and not the foil, ``mturk.caption >=
2``); ``--all-records`` keeps every record.

The images come from five datasets, told by each record's ``dataset``. An example's image is
``SOURCE/image_file`` (one image root holding a folder per source), or, with
``--image-root SOURCE=DIR`` for every source the files use, ``DIR/image_file``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    named_files,
    note_unwinnable,
    read_json_records,
    text_field,
)

SOURCES: dict[str, str] = {
    "SWiG": "swig",
    "visual7w": "visual7w",
    "coco2017": "coco2017",
    "coco_2017": "coco2017",
    "VisDial_v1.0": "visdial",
    "FOIL dataset": "foil",
}
"""The ``dataset`` values of VALSE's files -> the image source names (COCO 2017 is spelled
two ways)."""

PIECES: dict[str, str] = {
    "existence": "object/existence",
    "plurals": "counting/plurality",
    "counting-hard": "counting/balanced",
    "counting-small-quant": "counting/small_numbers",
    "counting-adversarial": "counting/adversarial",
    "relations": "relation/replace",
    "action-replacement": "action/replace",
    "actant-swap": "action/actant_swap",
    "coreference-standard": "coreference/standard",
    "coreference-hard": "coreference/clean",
    "foil-it": "object/replace",
}
"""VALSE's pieces (file stems) in the paper's order -> their capabilities."""

VALID_VOTES = 2
"""The valid set: at least this many of the three annotators chose the caption only."""


def add_arguments(parser: Any) -> None:
    """Options: keep the records the annotators did not validate."""
    parser.add_argument(
        "--all-records",
        dest="valse_all",
        action="store_true",
        help="valse: keep every record, not only the authors' valid set (mturk.caption >= 2)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per piece file, in the paper's order."""
    tests: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    for path in named_files(sources, ".json", list(PIECES), "a VALSE piece").values():
        examples = _examples(path, args, used)
        tests[path.stem] = make_test(
            path.stem,
            PIECES[path.stem],
            "caption",
            examples,
            threshold=args.threshold,
            description=f"VALSE {path.stem}: the caption must score above its foil"
            + ("" if args.valse_all else " (the authors' valid set)"),
        )
    missing = sorted(used - set(args.image_roots)) if args.image_roots else []
    if missing:
        raise SourceError(
            sources[0],
            "images from "
            + ", ".join(missing)
            + " but no --image-root NAME=DIR for "
            + ("it" if len(missing) == 1 else "them"),
        )
    return [
        (
            None,
            checklist(
                "VALSE (Parcalabescu et al. 2022): captions against foils that change one "
                "linguistic phenomenon.",
                [tests[name] for name in PIECES if name in tests],
            ),
        )
    ]


def _examples(path: Path, args: argparse.Namespace, used: set[str]) -> list[dict[str, Any]]:
    examples = []
    for line, key, record in read_json_records(path):
        if not isinstance(record, Mapping) or not isinstance(key, str) or not key.strip():
            raise SourceError(path, "expected a non-empty id mapped to a record object", line=line)
        if not args.valse_all and _votes(path, record, line) < VALID_VOTES:
            continue
        dataset = text_field(path, record, "dataset", None, line=line)
        if dataset not in SOURCES:
            raise SourceError(
                path,
                f"unknown dataset '{dataset}'; expected one of: {', '.join(SOURCES)}",
                line=line,
            )
        source = SOURCES[dataset]
        used.add(source)
        image = text_field(path, record, "image_file", None, line=line)
        root = args.image_roots.get(source, source)
        examples.append(
            {
                "id": key,
                "image": f"{root.rstrip('/')}/{image}",
                "caption": text_field(path, record, "caption", None, line=line),
                "negatives": [text_field(path, record, "foil", None, line=line)],
            }
        )
    if not examples:
        raise SourceError(path, "no records" + ("" if args.valse_all else " in the valid set"))
    note_unwinnable(path, examples)
    return examples


def _votes(path: Path, record: Mapping[str, Any], line: int) -> int:
    """``mturk.caption``: how many annotators chose the caption and not the foil."""
    mturk = record.get("mturk")
    votes = mturk.get("caption") if isinstance(mturk, Mapping) else None
    if isinstance(votes, bool) or not isinstance(votes, int) or not 0 <= votes <= 3:
        raise SourceError(
            path,
            f"'mturk.caption' must be a vote count 0-3, got {votes!r} "
            "(or import with --all-records)",
            line=line,
        )
    return votes


IMPORTER = Importer(
    "valse",
    "VALSE's eleven JSON pieces (one test per piece, the authors' valid set)",
    add_arguments,
    convert,
    image_sources=tuple(sorted(set(SOURCES.values()))),
)
