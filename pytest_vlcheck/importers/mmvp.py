"""MMVP-VLM (Tong et al. 2024, "Eyes wide shut?"): ``Questions.csv`` with a header and rows
``question id, pattern type, statement``, two rows per pair (ids 1 and 2, 3 and 4, ...), nine
pattern types x 15 pairs; the images are ``<pattern type>/<id>.jpg`` (the pair's two images
under the first row's pattern type), the folder given as ``--image-root``.

The authors' protocol: the text is "a photo of " + the statement; the softmax over the pair's
two images picks image 1 when its probability is above 0.5, so a tie picks image 2; image 1 is
true for odd ids, image 2 for even ids. Each statement is an ``image`` example with its true
image first: for an odd id a tie is wrong (``ties: fail``), for an even id, whose true image is
image 2, a tie is right (the example says ``ties: first``). A pair counts only when both
statements are right: tag ``pair`` and ``all_of: pair``, MMVP's figure; the pattern type is the
``pattern`` slice.

MMVP's MLLM form, a ``Questions.csv`` with an ``Options`` column, is told apart by that
column and read by ``mmvp_mllm`` (a ``choice`` test).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    read_csv,
    whole_number,
)
from pytest_vlcheck.importers.mmvp_mllm import is_mllm, mllm_test
from pytest_vlcheck.tasks.choice import SCORINGS

CAPABILITY = "attribute/visual_pattern"
PROMPT = "a photo of "
COLUMNS = ("id", "type", "statement")


def add_arguments(parser: Any) -> None:
    """``--scoring`` of the MLLM form's choice test (default ``letter``)."""
    parser.add_argument(
        "--scoring",
        choices=SCORINGS,
        help="MMVP's MLLM form (Questions.csv with Options): how the choice test asks "
        "(default: letter)",
    )


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One test over every pair of the one ``Questions.csv``: the MLLM form's ``choice`` test
    when the file has the columns Question, Options and Correct Answer, else MMVP-VLM's."""
    files = files_under(sources, (".csv",))
    if len(files) != 1:
        raise SourceError(sources[0], f"expected one Questions.csv, got {len(files)} CSV files")
    path = files[0]
    rows = list(read_csv(path))
    if is_mllm(rows):
        return mllm_test(path, rows, args.threshold, args.scoring or "letter")
    if args.scoring is not None:
        raise SourceError(path, "--scoring is for MMVP's MLLM form (Questions.csv with the "
                          "columns Index, Question, Options, Correct Answer)")  # fmt: skip
    examples = _examples(path, rows)
    test = make_test(
        "mmvp",
        CAPABILITY,
        "image",
        examples,
        threshold=args.threshold,
        description="MMVP-VLM: of a pair of images that CLIP embeds alike, the statement must "
        "pick its own (image 1 when its softmax probability is above 0.5)",
        settings={"all_of": ["pair"]},
    )
    return [
        (
            None,
            checklist(
                "MMVP-VLM (Tong et al. 2024): nine visual patterns, pairs of images a CLIP "
                "model confuses; a pair counts when both statements pick their image.",
                [test],
            ),
        )
    ]


def _examples(path: Path, rows: list[tuple[int, dict[str, str]]]) -> list[dict[str, Any]]:
    if not rows:
        raise SourceError(path, "no rows under the header")
    columns = list(rows[0][1])
    if len(columns) < len(COLUMNS):
        raise SourceError(
            path, "expected three columns: question id, pattern type, statement", line=1
        )
    if len(rows) % 2:
        raise SourceError(path, f"{len(rows)} statements; expected pairs of two", line=rows[-1][0])
    examples = []
    for (line1, row1), (line2, row2) in zip(rows[::2], rows[1::2], strict=True):
        first, second = _row(path, line1, row1, columns), _row(path, line2, row2, columns)
        if second[0] != first[0] + 1 or first[0] % 2 != 1:
            raise SourceError(
                path,
                f"ids {first[0]} and {second[0]}: expected a pair of consecutive ids, the first "
                "odd",
                line=line2,
            )
        if first[1] != second[1]:
            raise SourceError(
                path,
                f"pattern type {second[1]!r} differs from its pair's {first[1]!r}",
                line=line2,
            )
        images = [f"{first[1]}/{first[0]}.jpg", f"{first[1]}/{second[0]}.jpg"]
        pair = f"{first[0]}-{second[0]}"
        for index, (qid, pattern, statement) in enumerate((first, second)):
            example: dict[str, Any] = {
                "id": str(qid),
                "text": PROMPT + statement,
                "image": images[index],
                "distractors": [images[1 - index]],
                "tags": {"pair": pair, "pattern": pattern},
            }
            if index == 1:
                example["ties"] = "first"  # a tie picks image 2, this statement's own
            examples.append(example)
    return examples


def _row(path: Path, line: int, row: dict[str, str], columns: list[str]) -> tuple[int, str, str]:
    """(question id, pattern type, statement) from the row's first three columns."""
    values = [(row.get(columns[i]) or "").strip() for i in range(3)]
    number = whole_number(values[0])
    if number is None:
        raise SourceError(path, f"question id {values[0]!r:.40} is not a number", line=line)
    if not values[1] or not values[2]:
        raise SourceError(path, "expected a pattern type and a statement", line=line)
    return number, values[1], values[2]


IMPORTER = Importer(
    "mmvp",
    "MMVP-VLM's or MMVP's (MLLM) Questions.csv (pairs; pair accuracy via all_of)",
    add_arguments,
    convert,
)
