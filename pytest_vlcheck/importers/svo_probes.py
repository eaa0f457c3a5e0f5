"""SVO-Probes (Hendricks & Nematzadeh 2021): a CSV of sentences with a positive and a
negative image URL each.

The paper's task is binary image-text matching at a 0.5 cut-off: each row gives a positive
pair (sentence, positive image, label match) and a negative pair (sentence, negative image,
label no_match); the ``*_neg`` columns say whether the negative image differs in the
subject, the verb or the object, which becomes ``neg_type`` of both pairs so that positive,
negative and average accuracy can be broken down by negative type as in the paper.
``--form image`` writes the pairwise form instead (the sentence must pick its positive image
over its negative one), ``--form both`` writes both tests.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    make_test,
    only_one_source,
    read_csv,
)

_COLUMNS = ("index", "sentence", "subj_neg", "verb_neg", "obj_neg", "pos_url", "neg_url")
_NEG_COLUMNS = (("subj_neg", "subject"), ("verb_neg", "verb"), ("obj_neg", "object"))
_TRUE = {"true", "1", "yes", "t"}
_FALSE = {"false", "0", "no", "f"}
_URL = re.compile(r"https?://\S+")


def add_arguments(parser: Any) -> None:
    """Options: which task form(s) to write."""
    parser.add_argument(
        "--form",
        choices=("match", "image", "both"),
        default="match",
        help="svo-probes: 'match' (binary matching, the paper's task), "
        "'image' (sentence picks its positive image over the negative), "
        "or both tests (default match)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One match test, one image test, or both, over all rows."""
    path = only_one_source(sources, "SVO-Probes CSV")
    rows = list(_rows(path))
    tests = []
    if args.form in ("match", "both"):
        examples = []
        for row in rows:
            for part, url, label in (
                ("pos", row["pos_url"], "match"),
                ("neg", row["neg_url"], "no_match"),
            ):
                examples.append(
                    {
                        "id": f"{row['id']}-{part}",
                        "image": {"url": url},
                        "caption": row["sentence"],
                        "label": label,
                        "neg_type": row["neg_type"],
                    }
                )
        tests.append(
            make_test(
                "svo_probes",
                "action/svo",
                "match",
                examples,
                threshold=args.threshold,
                description="SVO-Probes: binary image-sentence matching at "
                "the 0.5 cut-off, by subject/verb/object negative",
            )
        )
    if args.form in ("image", "both"):
        examples = [
            {
                "id": row["id"],
                "text": row["sentence"],
                "image": {"url": row["pos_url"]},
                "distractors": [{"url": row["neg_url"]}],
                "tags": {"neg_type": row["neg_type"]},
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
    return [
        (
            None,
            checklist(
                "SVO-Probes (Hendricks & Nematzadeh 2021): subject, verb and "
                "object negatives; images are web URLs.",
                tests,
            ),
        )
    ]


def _rows(path: Path) -> Any:
    seen: dict[str, int] = {}
    count = 0
    for line, row in read_csv(path):
        missing = [c for c in _COLUMNS if c not in row]
        if missing:
            raise SourceError(
                path,
                f"missing column(s) {', '.join(missing)}; expected {', '.join(_COLUMNS)}",
                line=1,
            )
        row_id = row["index"].strip()
        if not row_id:
            raise SourceError(path, "empty 'index'", line=line)
        if row_id in seen:
            raise SourceError(path, f"index {row_id} repeats line {seen[row_id]}", line=line)
        seen[row_id] = line
        sentence = row["sentence"]
        if not sentence.strip():
            raise SourceError(path, "empty sentence", line=line)
        flags = [name for column, name in _NEG_COLUMNS if _flag(path, line, column, row[column])]
        if len(flags) != 1:
            raise SourceError(
                path,
                f"{len(flags)} of subj_neg, verb_neg, obj_neg are true "
                f"({', '.join(flags) or 'none'}); expected exactly one",
                line=line,
            )
        for column in ("pos_url", "neg_url"):
            if not _URL.fullmatch(row[column].strip()):
                raise SourceError(
                    path, f"{column} {row[column]!r} is not an http(s) URL", line=line
                )
        count += 1
        yield {
            "id": row_id,
            "sentence": sentence,
            "neg_type": flags[0],
            "pos_url": row["pos_url"].strip(),
            "neg_url": row["neg_url"].strip(),
        }
    if not count:
        raise SourceError(path, "no rows after the header", line=2)


def _flag(path: Path, line: int, column: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SourceError(path, f"{column} is {value!r}; expected True or False", line=line)


IMPORTER = Importer(
    "svo-probes",
    "the SVO-Probes CSV (match test by negative type; "
    "optionally the pairwise image test); URL images",
    add_arguments,
    convert,
)
