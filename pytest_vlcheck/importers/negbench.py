"""NegBench (Alhamoud et al. 2025) multiple-choice CSVs: ``image_path, caption_0 .. caption_3,
correct_answer, correct_answer_template`` (the template ``positive``, ``negative`` or
``hybrid``).

One ``caption`` test per file: the option at ``correct_answer`` is the caption, the other
options (in column order) its negatives; the template becomes the ``template`` slice, which
gives NegBench's per-template accuracies.

NegBench's figure is the accuracy of ``torch.argmax`` over the options in column order
(``benchmarks/src/evaluation/mcq.py``): the first maximum wins. A file whose answers are all in
column 0 (the released files) becomes ``ties: first``; any other becomes ``ties: order`` with
each example's ``position`` (its answer's column, written when it is not 0), so the answer wins
ties with later columns and loses them to earlier ones, as the authors count.
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
    files_under,
    make_test,
    note_unwinnable,
    read_csv,
    safe_test_id,
    text_field,
    whole_number,
)

TEMPLATES = ("positive", "negative", "hybrid")
_OPTION = re.compile(r"caption_([0-9]{1,9})")


def add_arguments(parser: Any) -> None:
    """NegBench has no options of its own."""


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test per CSV file, named after it."""
    tests: dict[str, dict[str, Any]] = {}
    for path in files_under(sources, (".csv",)):
        test_id = safe_test_id("negbench", path.stem)
        if test_id in tests:
            raise SourceError(path, f"a second file named {path.name}")
        examples = _examples(path)
        ordered = any("position" in example for example in examples)
        tests[test_id] = make_test(
            test_id,
            "negation/multiple_choice",
            "caption",
            examples,
            threshold=args.threshold,
            settings={"ties": "order" if ordered else "first"},
            description=f"NegBench MCQ {path.stem}: the right option (affirmed, negated or "
            "both) must be the first maximum of the options in column order",
        )
    return [
        (
            None,
            checklist(
                "NegBench (Alhamoud et al. 2025): multiple-choice captions that affirm and "
                "negate what the image shows.",
                list(tests.values()),
            ),
        )
    ]


def _examples(path: Path) -> list[dict[str, Any]]:
    examples = []
    options: list[str] = []
    for position, (line, row) in enumerate(read_csv(path)):
        if not options:
            options = _option_columns(path, row)
        captions = [text_field(path, row, key, None, line=line) for key in options]
        answer = _answer(path, row, line, len(captions))
        template = text_field(path, row, "correct_answer_template", None, line=line).strip()
        if template not in TEMPLATES:
            raise SourceError(
                path,
                f"'correct_answer_template' is {template!r}; expected one of: "
                + ", ".join(TEMPLATES),
                line=line,
            )
        example: dict[str, Any] = {
            "id": str(position),
            "image": text_field(path, row, "image_path", None, line=line),
            "caption": captions[answer],
            "negatives": captions[:answer] + captions[answer + 1 :],
            "tags": {"template": template, "answer": str(answer)},
        }
        if answer:
            example["position"] = answer  # ties: order reads the answer's column
        examples.append(example)
    if not examples:
        raise SourceError(path, "no rows under the header")
    note_unwinnable(path, examples)
    return examples


def _option_columns(path: Path, row: dict[str, str]) -> list[str]:
    """``caption_0``, ``caption_1``, ... in index order; at least two, with no gap."""
    numbers = sorted(int(m.group(1)) for m in map(_OPTION.fullmatch, row) if m)
    if len(numbers) < 2 or numbers != list(range(len(numbers))):
        raise SourceError(
            path, "expected option columns caption_0, caption_1, ... (two or more)", line=1
        )
    return [f"caption_{n}" for n in numbers]


def _answer(path: Path, row: dict[str, str], line: int, count: int) -> int:
    text = text_field(path, row, "correct_answer", None, line=line).strip()
    answer = whole_number(text)
    if answer is None or answer >= count:
        raise SourceError(
            path,
            f"'correct_answer' is {text!r:.40}; expected an option index 0-{count - 1}",
            line=line,
        )
    return answer


IMPORTER = Importer(
    "negbench",
    "NegBench's multiple-choice CSVs (one test per file, slices by template)",
    add_arguments,
    convert,
)
