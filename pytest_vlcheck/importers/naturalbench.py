"""NaturalBench (Li et al. 2024, "Evaluating vision-language models on natural adversarial
samples"), in its two released forms.

**VQA**: the Hugging Face dataset ``BaiqiL/NaturalBench`` as parquet, a record per row with
``Image_0``, ``Image_1`` (embedded ``{bytes, path}``), ``Question_0``, ``Question_1``,
``Question_Type`` (``yes_no`` or ``multiple_choice``), the four answers
``Image_I_Question_Q`` and, when present, ``Index`` and ``Source``. Each record is four
examples, question q on image i (``q0_i0``, ``q0_i1``, ``q1_i0``, ``q1_i1``), asked as the
authors' ``naturalbench_vqa.py`` asks them: the question, a space and the type's instruction.
A ``yes_no`` record's examples make a ``match`` test with ``decide: yes_vs_no`` (answer Yes is
a match); a ``multiple_choice`` record's (the options are written in the question, the answer
is a letter) a ``choice`` test with the options ``A`` and ``B`` scored by likelihood, so the
letter the model finds more likely after the question is its answer. The images are written,
named by their content, to ``OUT_images/`` beside the checklist.

The authors' ``get_scores`` gives ``Acc`` (the four answers), ``Q_Acc`` (a question right on
both images), ``I_Acc`` (an image right on both questions) and ``G_Acc`` (all four right).
Here: the pass rate is ``Acc``; the tags ``question``, ``image`` and ``group`` with ``all_of``
give ``all_of_question`` (``Q_Acc``), ``all_of_image`` (``I_Acc``) and ``all_of_group``
(``G_Acc``). ``get_scores`` compares the model's answers with the fixed pattern q0_i0 = 1,
q0_i1 = 0, q1_i0 = 0, q1_i1 = 1 (Yes/No/No/Yes, A/B/B/A), never with the record's answers; a
record whose answers break that pattern is named in a note and scored here against its own
answers.

**Retrieval**: ``NaturalBench-Retrieval/metadata.json``, a list of ``{index, image_0,
image_1, caption_0, caption_1}`` (caption i true for image i), images under its ``images/``
folder (``--image-root``): one ``group`` test, as Winoground (the authors' text, image and
group scores with strict ``>``).
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
    files_under,
    make_test,
    note,
    text_field,
)
from pytest_vlcheck.importers.embedded import content_name, image_writer, parquet_rows
from pytest_vlcheck.importers.winoground import (
    GroupFields,
    JsonGroupSet,
    add_criterion,
    json_group_test,
)

CAPABILITY = "scene/natural_adversarial"
IMAGES = ("Image_0", "Image_1")
QUESTIONS = ("Question_0", "Question_1")
CELLS = {
    "q0_i0": ("Image_0_Question_0", 0, 0),
    "q0_i1": ("Image_1_Question_0", 0, 1),
    "q1_i0": ("Image_0_Question_1", 1, 0),
    "q1_i1": ("Image_1_Question_1", 1, 1),
}
"""The authors' four keys: the answer column, the question and the image."""
COLUMNS = (*IMAGES, *QUESTIONS, "Question_Type", *(column for column, _, _ in CELLS.values()))
OPTIONAL = ("Index", "Source")
KINDS = {
    "yes_no": ("Yes", "No", "Please answer Yes or No."),
    "multiple_choice": ("A", "B", "Please output the letter corresponding to the correct option."),
}
"""Question type -> its two answers (the first is get_scores' 1) and the authors' suffix."""
ALL_OF = ["question", "image", "group"]
RETRIEVAL = JsonGroupSet(
    "metadata.json",
    GroupFields("index", ("image_0", "image_1"), ("caption_0", "caption_1")),
    "naturalbench-retrieval",
    CAPABILITY,
    "NaturalBench-Retrieval: caption i must go with image i both ways",
    "NaturalBench-Retrieval (Li et al. 2024): pairs of natural images and captions, matched "
    "both ways.",
)


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """The VQA tests from parquet files, or the retrieval test from ``metadata.json``."""
    files = files_under(sources, (".parquet", ".json"))
    forms = {path.suffix.lower() for path in files}
    if len(forms) > 1:
        raise SourceError(
            sources[0],
            "parquet files and a JSON file together; give the VQA release's parquet files or "
            "the retrieval form's metadata.json, one import each",
        )
    if forms == {".json"}:
        return _retrieval(files, args)
    if getattr(args, "image_root", None):
        raise SourceError(
            sources[0],
            "--image-root does not apply: NaturalBench's images are written beside the checklist",
        )
    folder = f"{args.output.stem}_images"
    examples: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    seen: set[str] = set()
    for path in files:
        for index, row in parquet_rows(path, COLUMNS, OPTIONAL):
            record = _record_id(path, index, row)
            if record in seen:
                raise SourceError(path, "this Index is given twice", record=record)
            seen.add(record)
            kind, four = _record(path, index, record, row, folder)
            examples[kind] += four
    if not any(examples.values()):
        raise SourceError(sources[0], "no rows in the parquet files")
    args._vl_extra_writers = [image_writer(files, IMAGES, folder, content_name)]
    tests = [_vqa_test(kind, found, args.threshold) for kind, found in examples.items() if found]
    return [
        (
            None,
            checklist(
                "NaturalBench (Li et al. 2024): pairs of natural images and pairs of questions "
                "whose answers differ between the images; Acc, Q-Acc, I-Acc and G-Acc.",
                tests,
            ),
        )
    ]


def _record(
    path: Path, index: int, record: str, row: Mapping[str, Any], folder: str
) -> tuple[str, list[dict[str, Any]]]:
    """A row's question type and its four examples, in the authors' order."""
    kind = text_field(path, row, "Question_Type", record).strip()
    if kind not in KINDS:
        raise SourceError(
            path,
            f"'Question_Type' is {kind!r:.40}; expected yes_no or multiple_choice",
            record=record,
        )
    first, second, suffix = KINDS[kind]
    images = [f"{folder}/{content_name(path, index, dict(row), column)}" for column in IMAGES]
    questions = [text_field(path, row, column, record) for column in QUESTIONS]
    answers = {key: _answer(path, row, cell[0], record, kind) for key, cell in CELLS.items()}
    pattern = (first, second, second, first)
    if tuple(answers.values()) != pattern:
        note(
            f"{path}: record {record}: answers (q0_i0, q0_i1, q1_i0, q1_i1) are "
            f"{', '.join(answers.values())}, not the {'/'.join(pattern)} pattern the authors' "
            "get_scores assumes; scored here against the record's own answers"
        )
    tags = {"source": str(row["Source"]).strip()} if str(row.get("Source") or "").strip() else {}
    examples = []
    for key, (_, q, i) in CELLS.items():
        example: dict[str, Any] = {"id": f"{record}-{key}", "image": images[i]}
        asked = f"{questions[q]} {suffix}"
        if kind == "yes_no":
            label = "match" if answers[key] == first else "no_match"
            example.update(caption=questions[q], question=asked, label=label)
        else:
            example.update(question=asked, options=[first, second])
            example["answer"] = 0 if answers[key] == first else 1
        group = {"question": f"{record}:q{q}", "image": f"{record}:i{i}", "group": record}
        example["tags"] = {**group, **tags}
        examples.append(example)
    return kind, examples


def _record_id(path: Path, index: int, row: Mapping[str, Any]) -> str:
    """The row's ``Index`` when the file has one, else ``{file stem}:{row}``."""
    value = row.get("Index")
    if value is None:
        return f"{path.stem}:{index}"
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip():
        raise SourceError(path, f"'Index' is {value!r:.40}; expected a number", record=index)
    return str(value).strip()


def _answer(path: Path, row: Mapping[str, Any], column: str, record: str, kind: str) -> str:
    """An answer as the type spells it (``Yes``/``No`` in any case; ``A``/``B``, ``(A)``)."""
    first, second, _ = KINDS[kind]
    text = text_field(path, row, column, record).strip().strip("().").strip()
    for answer in (first, second):
        if text.lower() == answer.lower():
            return answer
    raise SourceError(
        path,
        f"'{column}' is {text!r:.40}; a {kind} question's answer is {first} or {second}",
        record=record,
    )


def _vqa_test(kind: str, examples: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"decide": "yes_vs_no"} if kind == "yes_no" else {}
    what = "P(Yes) > P(No)" if kind == "yes_no" else "the likelier letter, A or B,"
    return make_test(
        f"naturalbench-{kind}",
        CAPABILITY,
        "match" if kind == "yes_no" else "choice",
        examples,
        threshold=threshold,
        settings={**settings, "all_of": ALL_OF},
        description=f"NaturalBench {kind}: each question on each image of a record, {what} "
        "must be the answer; pass rate Acc, all_of_question Q-Acc, all_of_image I-Acc, "
        "all_of_group G-Acc",
    )


def _retrieval(files: list[Path], args: argparse.Namespace) -> list[Output]:
    if len(files) != 1:
        raise SourceError(files[-1], f"expected one metadata.json, got {len(files)} JSON files")
    return json_group_test(files, args, RETRIEVAL)


IMPORTER = Importer(
    "naturalbench",
    "NaturalBench's parquet release (VQA: Acc, Q-Acc, I-Acc, G-Acc) or retrieval metadata.json",
    add_criterion,
    convert,
)
