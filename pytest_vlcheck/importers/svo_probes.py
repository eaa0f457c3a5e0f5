"""SVO-Probes (Hendricks & Nematzadeh 2021): a CSV of sentences with a positive and a
negative image each.

The paper's task is binary image-text matching at a 0.5 cut-off, scored the way the authors'
analysis notebook does: only rows whose negative differs in exactly one of subject / verb /
object count (the others are left out with a note), and every unique (sentence, image id)
pair is one example, however many rows repeat it. A positive pair carries every negative
type it appears with (``neg_type`` becomes a list), so the per-type accuracies count it in
each, as the analysis does. Images are named by ``pos_image_id`` / ``neg_image_id``: with
``--image-root`` they are files ``{id}.jpg`` there (``--image-pattern`` changes the name);
without it, the rows' URLs. ``--form image`` writes the pairwise form instead (the sentence
must pick its positive image over its negative one), ``--form both`` writes both tests.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    note,
    only_one_source,
    read_csv,
)

_COLUMNS = ("sentence", "subj_neg", "verb_neg", "obj_neg", "pos_image_id", "neg_image_id")
_URL_COLUMNS = ("pos_url", "neg_url")
_NEG_COLUMNS = (("subj_neg", "subject"), ("verb_neg", "verb"), ("obj_neg", "object"))
_TRUE = {"true", "1", "yes", "t"}
_FALSE = {"false", "0", "no", "f"}
_URL = re.compile(r"https?://\S+")
_DEFAULT_PATTERN = "{id}.jpg"


@dataclass(frozen=True)
class _Row:
    """One kept CSV row: a sentence, its positive and negative image, the negative's type."""

    id: str
    sentence: str
    neg_type: str
    images: dict[str, str]  # "pos" / "neg" -> image id
    urls: dict[str, str]


@dataclass
class _Pair:
    """One unique (sentence, image id) pair of one side, with every type it appears with."""

    id: str
    image: Any
    caption: str
    label: str
    types: list[str] = field(default_factory=list)


def add_arguments(parser: Any) -> None:
    """Options: which task form(s) to write, how image files are named."""
    parser.add_argument(
        "--form",
        choices=("match", "image", "both"),
        default="match",
        help="svo-probes: 'match' (binary matching, the paper's task), "
        "'image' (sentence picks its positive image over the negative), "
        "or both tests (default match)",
    )
    parser.add_argument(
        "--image-pattern",
        metavar="PATTERN",
        help="svo-probes: file name of an image under --image-root, {id} standing for "
        f"pos_image_id / neg_image_id (default {_DEFAULT_PATTERN})",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One match test, one image test, or both, over the rows with one negative type."""
    path = only_one_source(sources, "SVO-Probes CSV")
    pattern = _pattern(path, args)
    rows = list(_rows(path, by_id=pattern is not None))

    def image(row: _Row, side: str) -> Any:
        if pattern is None:
            return {"url": row.urls[side]}
        return pattern.format(id=row.images[side])

    tests = []
    if args.form in ("match", "both"):
        tests.append(
            make_test(
                "svo_probes",
                "action/svo",
                "match",
                _match_examples(rows, image),
                threshold=args.threshold,
                description="SVO-Probes: binary image-sentence matching at the 0.5 "
                "cut-off, by subject/verb/object negative; one example per unique pair",
            )
        )
    if args.form in ("image", "both"):
        examples = [
            {
                "id": row.id,
                "text": row.sentence,
                "image": image(row, "pos"),
                "distractors": [image(row, "neg")],
                "tags": {"neg_type": row.neg_type},
            }
            for row in rows
        ]
        tests.append(
            make_test(
                "svo_probes_pairs",
                "action/svo",
                "image",
                examples,
                threshold=args.threshold,
                description="SVO-Probes pairs: the sentence must score its "
                "positive image above its negative image",
            )
        )
    if pattern is not None:
        _note_missing(args.image_root, pattern, rows)
    where = "files named by image id" if pattern is not None else "web URLs"
    description = (
        f"SVO-Probes (Hendricks & Nematzadeh 2021): subject, verb and object negatives; "
        f"images are {where}."
    )
    return [(None, checklist(description, tests))]


def _pattern(path: Path, args: argparse.Namespace) -> str | None:
    """The image file-name pattern, or None for URLs (no ``--image-root``)."""
    if args.image_root is None:
        if args.image_pattern is not None:
            raise SourceError(
                path, "--image-pattern names files under --image-root; give --image-root too"
            )
        return None
    pattern = args.image_pattern or _DEFAULT_PATTERN
    try:
        sample = pattern.format(id="1")
    except (KeyError, IndexError, ValueError):
        sample = pattern
    if sample == pattern:
        raise SourceError(
            path, f"--image-pattern '{pattern}' must contain {{id}} and no other {{...}} field"
        )
    return pattern


def _match_examples(rows: list[_Row], image: Callable[[_Row, str], Any]) -> list[dict[str, Any]]:
    """One example per unique (sentence, image id) of each side, in order of first row."""
    pairs: dict[tuple[str, str, str], _Pair] = {}
    for row in rows:
        for side, label in (("pos", "match"), ("neg", "no_match")):
            key = (side, row.sentence, row.images[side])
            pair = pairs.get(key)
            if pair is None:
                pair = _Pair(f"{row.id}-{side}", image(row, side), row.sentence, label)
                pairs[key] = pair
            if row.neg_type not in pair.types:
                pair.types.append(row.neg_type)
    order = [name for _, name in _NEG_COLUMNS]
    examples = []
    for pair in pairs.values():
        types = sorted(pair.types, key=order.index)
        examples.append(
            {
                "id": pair.id,
                "image": pair.image,
                "caption": pair.caption,
                "label": pair.label,
                "neg_type": types[0] if len(types) == 1 else types,
            }
        )
    return examples


def _note_missing(image_root: str, pattern: str, rows: list[_Row]) -> None:
    """Say how many images are not (yet) under the root: most URLs are dead, so users keep
    what they could download, and ``--vl-missing skip`` scores the rest."""
    ids = sorted({image_id for row in rows for image_id in row.images.values()})
    missing = [i for i in ids if not (Path(image_root) / pattern.format(id=i)).is_file()]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        note(
            f"{len(missing)} of {len(ids)} images are not in {image_root} ({shown}); "
            "pytest --vl-missing skip scores the pairs whose images are there"
        )


def _rows(path: Path, *, by_id: bool) -> Iterator[_Row]:
    """The rows with exactly one negative flag; the others are counted in a note."""
    required = _COLUMNS if by_id else _COLUMNS + _URL_COLUMNS
    seen: dict[str, int] = {}
    kept = 0
    left_out = {"none": 0, "several": 0}
    for position, (line, row) in enumerate(read_csv(path)):
        missing = [c for c in required if c not in row]
        if missing:
            raise SourceError(
                path,
                f"missing column(s) {', '.join(missing)}; expected {', '.join(required)}",
                line=1,
            )
        row_id = _row_id(path, line, row, position, seen)
        flags = [name for column, name in _NEG_COLUMNS if _flag(path, line, column, row[column])]
        if len(flags) != 1:
            left_out["none" if not flags else "several"] += 1
            continue
        kept += 1
        yield _Row(
            row_id,
            _text(path, line, row, "sentence"),
            flags[0],
            {side: _text(path, line, row, f"{side}_image_id") for side in ("pos", "neg")},
            {} if by_id else {side: _url(path, line, row, side) for side in ("pos", "neg")},
        )
    if left_out["several"]:
        note(
            f"{path}: left out {left_out['several']} row(s) whose negative differs in more "
            "than one of subject, verb, object (the authors' analysis leaves them out too)"
        )
    if left_out["none"]:
        note(f"{path}: left out {left_out['none']} row(s) with no negative type")
    if not kept:
        raise SourceError(path, "no rows with exactly one negative type", line=2)


def _row_id(path: Path, line: int, row: dict[str, str], position: int, seen: dict[str, int]) -> str:
    """The ``index`` column when the file has one (older exports), else the row's position
    (the released CSV has no index column; pandas numbers its rows from 0)."""
    if "index" not in row:
        return str(position)
    row_id = row["index"].strip()
    if not row_id:
        raise SourceError(path, "empty 'index'", line=line)
    if row_id in seen:
        raise SourceError(path, f"index {row_id} repeats line {seen[row_id]}", line=line)
    seen[row_id] = line
    return row_id


def _text(path: Path, line: int, row: dict[str, str], column: str) -> str:
    value = row[column]
    if not value.strip():
        raise SourceError(path, f"empty {column}", line=line)
    return value if column == "sentence" else value.strip()


def _url(path: Path, line: int, row: dict[str, str], side: str) -> str:
    value = row[f"{side}_url"].strip()
    if not _URL.fullmatch(value):
        raise SourceError(
            path,
            f"{side}_url {row[side + '_url']!r} is not an http(s) URL "
            "(give --image-root to use image files named by id)",
            line=line,
        )
    return value


def _flag(path: Path, line: int, column: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SourceError(path, f"{column} is {value!r}; expected True or False", line=line)


IMPORTER = Importer(
    "svo-probes",
    "the SVO-Probes CSV (match test over unique pairs by negative type; "
    "optionally the pairwise image test); images by id or URL",
    add_arguments,
    convert,
)
