"""POPE (Li et al. 2023, "Evaluating object hallucination in large vision-language models"):
``coco_pope_{random,popular,adversarial}.json`` (and the A-OKVQA / GQA files named
``*_pope_*_{random,popular,adversarial}.json``), JSON Lines despite the suffix: one
``{question_id, image, text, label}`` per line, ``text`` a question such as "Is there a
snowboard in the image?" and ``label`` ``yes`` or ``no``; the images are COCO val2014 file
names, under the folder given as ``--image-root``.

One ``match`` test per file, named after it, with ``decide: yes_vs_no``: the model's own
decision, P(Yes) > P(No), on the question asked verbatim (``question``); label yes is a
match. The caption is the object the question asks about (the whole question when it is not
in POPE's "Is there a/an X in the image?" form). POPE's numbers are in the result: accuracy
is the pass rate, then ``precision``, ``recall``, ``f1`` and ``yes_ratio``. The authors'
``evaluate.py`` reads generated answers and counts any answer without "no" or "not" as yes;
here the decision is a comparison of log-probabilities, and an exact tie is neither answer:
it fails, is counted in ``ties`` and is not a yes (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    read_jsonl,
    safe_test_id,
    text_field,
)

CAPABILITY = "object/existence"
SPLITS = ("random", "popular", "adversarial")
LABELS = {"yes": "match", "no": "no_match"}
_FILE = re.compile(r".*_pope_(?:.*_)?(random|popular|adversarial)")
_OBJECT = re.compile(r"Is there an? (.+?) in the image\?")


def add_arguments(parser: Any) -> None:
    """POPE has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per split file, in the order the files are found."""
    tests = []
    seen: dict[str, Path] = {}
    for path in files_under(sources, (".json", ".jsonl")):
        if not _FILE.fullmatch(path.stem):
            raise SourceError(
                path,
                "not a POPE file; expected a name such as coco_pope_random.json (a split of: "
                + ", ".join(SPLITS)
                + ")",
            )
        test_id = safe_test_id(path.stem)
        if test_id in seen:
            raise SourceError(path, f"'{path.stem}' given twice (also as {seen[test_id]})")
        seen[test_id] = path
        tests.append(_test(path, test_id, args.threshold))
    return [
        (
            None,
            checklist(
                "POPE (Li et al. 2023): yes/no questions on whether an object is in a COCO "
                "image; the model's own answer, P(Yes) > P(No), must be the label.",
                tests,
            ),
        )
    ]


def _test(path: Path, test_id: str, threshold: float | None) -> dict[str, Any]:
    examples = []
    lines: dict[str, int] = {}
    for line, record in read_jsonl(path):
        example = _example(path, line, record)
        if example["id"] in lines:
            raise SourceError(
                path, f"question_id {example['id']} repeats line {lines[example['id']]}", line=line
            )
        lines[example["id"]] = line
        examples.append(example)
    if not examples:
        raise SourceError(path, "no questions in the file")
    split = _FILE.fullmatch(path.stem)
    return make_test(
        test_id,
        CAPABILITY,
        "match",
        examples,
        threshold=threshold,
        settings={"decide": "yes_vs_no"},
        description=f"POPE {split.group(1) if split else path.stem}: the answer to 'Is there "
        "a ... in the image?' (P(Yes) > P(No)) must be the label",
    )


def _example(path: Path, line: int, record: Any) -> dict[str, Any]:
    """One line as a match example: the question verbatim, its object as the caption."""
    if not isinstance(record, Mapping):
        raise SourceError(
            path, "expected a JSON object {question_id, image, text, label}", line=line
        )
    qid = record.get("question_id")
    if isinstance(qid, bool) or not isinstance(qid, (int, str)) or not str(qid).strip():
        raise SourceError(path, f"missing or invalid 'question_id': {qid!r:.40}", line=line)
    image = text_field(path, record, "image", None, line=line)
    question = text_field(path, record, "text", None, line=line)
    label = record.get("label")
    if label not in LABELS:
        raise SourceError(path, f"'label' is {label!r:.40}; expected 'yes' or 'no'", line=line)
    asked = _OBJECT.fullmatch(question.strip())
    return {
        "id": str(qid).strip(),
        "image": image,
        "caption": asked.group(1) if asked else question,
        "question": question,
        "label": LABELS[label],
    }


IMPORTER = Importer(
    "pope",
    "POPE's coco_pope_{random,popular,adversarial}.json lines (a yes/no match test per split)",
    add_arguments,
    convert,
)
