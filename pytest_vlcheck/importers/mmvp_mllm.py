"""MMVP's MLLM form (Tong et al. 2024, "Eyes wide shut?"): ``Questions.csv`` with the columns
``Index``, ``Question``, ``Options`` (``(a) Open (b) Closed``) and ``Correct Answer``
(``(a)``), one row per image ``MMVP Images/{Index}.jpg`` (the folder given as
``--image-root``); rows 1 and 2, 3 and 4, ... are a pair of images that CLIP embeds alike,
asked the same question.

Each row is a ``choice`` example (the options in their order, ``answer`` the letter's
position); ``scoring`` is ``letter`` unless ``--scoring`` says otherwise. The authors'
``evaluate_mllm.py`` asks the question and the options as written and ``gpt_grader.py`` counts
a pair only when both answers are graded right: tag ``pair`` and ``all_of: pair`` give that
pair accuracy (``all_of_pair``), the pass rate the per-question accuracy. This form's file
has no pattern column (the nine patterns are MMVP-VLM's), so there is no per-pattern slice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import (
    Output,
    SourceError,
    checklist,
    make_test,
    whole_number,
)

COLUMNS = ("Index", "Question", "Options", "Correct Answer")
CAPABILITY = "attribute/visual_pattern"
_OPTION = re.compile(r"\(([a-z])\)")
_ANSWER = re.compile(r"\(?([a-zA-Z])\)?(?:[\s.:].*)?", re.DOTALL)


def is_mllm(rows: list[tuple[int, dict[str, str]]]) -> bool:
    """Whether a ``Questions.csv`` is the MLLM form: it has the Options column."""
    return bool(rows) and "Options" in rows[0][1]


def mllm_test(
    path: Path, rows: list[tuple[int, dict[str, str]]], threshold: float | None, scoring: str
) -> list[Output]:
    """One ``choice`` test over every row, the pairs as ``all_of`` groups."""
    missing = [column for column in COLUMNS if column not in rows[0][1]]
    if missing:
        raise SourceError(path, f"no column {missing[0]!r}; expected {', '.join(COLUMNS)}", line=1)
    if len(rows) % 2:
        raise SourceError(path, f"{len(rows)} questions; expected pairs of two", line=rows[-1][0])
    examples = [_example(path, line, row, position) for position, (line, row) in enumerate(rows)]
    test = make_test(
        "mmvp-mllm",
        CAPABILITY,
        "choice",
        examples,
        threshold=threshold,
        settings={"scoring": scoring, "all_of": ["pair"]},
        description="MMVP: of a pair of images that CLIP embeds alike, each question must be "
        "answered right; pair accuracy is all_of_pair",
    )
    return [
        (
            None,
            checklist(
                "MMVP (Tong et al. 2024): questions on pairs of images a CLIP model confuses, "
                "asked a multimodal LLM; a pair counts when both answers are right.",
                [test],
            ),
        )
    ]


def _example(path: Path, line: int, row: dict[str, str], position: int) -> dict[str, Any]:
    index = whole_number(row["Index"].strip())
    if index != position + 1:
        raise SourceError(
            path,
            f"Index {row['Index'].strip()!r:.40}; expected {position + 1} (the authors read "
            "image N.jpg for the N-th row)",
            line=line,
        )
    question = row["Question"].strip()
    if not question:
        raise SourceError(path, "empty Question", line=line)
    options = _options(path, line, row["Options"])
    answer = _ANSWER.fullmatch(row["Correct Answer"].strip())
    letter = answer.group(1).lower() if answer else ""
    if not letter or ord(letter) - ord("a") >= len(options):
        raise SourceError(
            path,
            f"Correct Answer {row['Correct Answer'].strip()!r:.40}; expected one of the options' "
            "letters, e.g. (a)",
            line=line,
        )
    first = index - (index + 1) % 2  # 1 for rows 1 and 2, 3 for rows 3 and 4, ...
    return {
        "id": str(index),
        "image": f"{index}.jpg",
        "question": question,
        "options": options,
        "answer": ord(letter) - ord("a"),
        "tags": {"pair": f"{first}-{first + 1}"},
    }


def _options(path: Path, line: int, text: str) -> list[str]:
    """``(a) Open (b) Closed`` -> ``[Open, Closed]``, the letters a, b, ... in order."""
    parts = _OPTION.split(text.strip())
    letters, options = parts[1::2], [p.strip() for p in parts[2::2]]
    expected = [chr(ord("a") + i) for i in range(len(letters))]
    if parts[0].strip() or len(options) < 2 or letters != expected or not all(options):
        raise SourceError(
            path,
            f"Options {text.strip()!r:.60}; expected two or more lettered options in order, "
            "e.g. (a) Open (b) Closed",
            line=line,
        )
    return options
