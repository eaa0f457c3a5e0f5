"""POPE, NaturalBench and MMVP's MLLM form: fixtures in the authors' released formats,
imported and asked through a ``py:`` scorer that answers from tables, the authors' numbers
worked out by hand (ties included): POPE's accuracy, precision, recall, F1 and yes-ratio;
NaturalBench's Acc, Q-Acc, I-Acc and G-Acc (``get_scores``) and its retrieval text, image and
group scores; MMVP's per-question and pair accuracy."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.table_speaker import code_image, scorer_source
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
YES_NO = "Please answer Yes or No."
LETTER = "Please output the letter corresponding to the correct option."


def _png(code: int) -> bytes:
    out = io.BytesIO()
    code_image(code).save(out, format="PNG")
    return out.getvalue()


# NaturalBench records: question type, image codes, questions, answers (q0_i0, q0_i1, q1_i0,
# q1_i1). Record 1 breaks the authors' Yes/No/No/Yes pattern; record 3 shares record 0's
# first image (one file).
NB_RECORDS: list[tuple[str, tuple[int, int], tuple[str, str], tuple[str, ...]]] = [
    ("yes_no", (1, 2), ("Is the cup full?", "Is the cup empty?"), ("Yes", "No", "No", "Yes")),
    ("yes_no", (3, 4), ("Is it raining?", "Is it sunny?"), ("No", "Yes", "Yes", "No")),
    (
        "multiple_choice",
        (5, 6),
        ("Where is the cat? A. On the sofa B. Under it", "What is lit? A. A lamp B. A candle"),
        ("A", "B", "B", "A"),
    ),
    ("yes_no", (1, 7), ("Is there a spoon?", "Is there a fork?"), ("yes", "no", "no", "yes")),
]


def naturalbench_parquet(
    path: Path, records=NB_RECORDS, drop: str | None = None, same_index: bool = False
) -> Path:
    """The dataset's columns (what ``datasets`` writes: images as {bytes, path}); with
    ``same_index`` every record has Index 7."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = []
    for index, (kind, (i0, i1), (q0, q1), answers) in enumerate(records):
        row = {
            "Index": 7 if same_index else index,
            "Image_0": {"bytes": _png(i0), "path": None},
            "Image_1": {"bytes": _png(i1), "path": None},
            "Question_0": q0,
            "Image_0_Question_0": answers[0],
            "Image_1_Question_0": answers[1],
            "Question_1": q1,
            "Image_0_Question_1": answers[2],
            "Image_1_Question_1": answers[3],
            "Question_Type": kind,
            "Source": "flickr" if index % 2 else "docci",
        }
        rows.append({k: v for k, v in row.items() if k != drop})
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# ---------------------------------------------------------------- shapes


def test_pope_one_match_test_per_split(tmp_path: Path) -> None:
    doc = imported(tmp_path, "pope", FIXTURES / "pope")
    tests = {t["id"]: t for t in doc["tests"]}
    assert list(tests) == ["coco_pope_adversarial", "coco_pope_random"]
    random = tests["coco_pope_random"]
    assert (random["task"], random["decide"], random["capability"]) == (
        "match",
        "yes_vs_no",
        "object/existence",
    )
    assert random["threshold"] == 0.5
    assert examples_of(doc, "coco_pope_random")["5"] == {
        "id": "5",
        "image": "COCO_val2014_000000000002.jpg",
        "caption": "apple",
        "question": "Is there an apple in the image?",
        "label": "no_match",
    }
    # not in POPE's template: the question is its own caption
    odd = examples_of(doc, "coco_pope_adversarial")["2"]
    assert odd["caption"] == odd["question"] == "Is there a cat in the picture?"


def test_naturalbench_four_examples_per_record(tmp_path: Path, capsys) -> None:
    source = naturalbench_parquet(tmp_path / "train-00000-of-00001.parquet")
    doc = imported(tmp_path, "naturalbench", source)
    err = capsys.readouterr().err
    assert err.strip() == (
        f"vlcheck import: note: {source}: record 1: answers (q0_i0, q0_i1, q1_i0, q1_i1) are "
        "No, Yes, Yes, No, not the Yes/No/No/Yes pattern the authors' get_scores assumes; "
        "scored here against the record's own answers"
    )
    tests = {t["id"]: t for t in doc["tests"]}
    assert list(tests) == ["naturalbench-yes_no", "naturalbench-multiple_choice"]
    assert tests["naturalbench-yes_no"]["all_of"] == ["question", "image", "group"]
    assert tests["naturalbench-multiple_choice"]["task"] == "choice"
    yes_no = examples_of(doc, "naturalbench-yes_no")
    assert len(yes_no) == 12
    first = yes_no["0-q1_i0"]
    assert first["question"] == f"Is the cup empty? {YES_NO}"
    assert (first["caption"], first["label"]) == ("Is the cup empty?", "no_match")
    assert first["tags"] == {"question": "0:q1", "image": "0:i0", "group": "0", "source": "docci"}
    assert yes_no["3-q0_i0"]["image"] == first["image"]  # the same bytes, one file
    choice = examples_of(doc, "naturalbench-multiple_choice")["2-q0_i1"]
    assert choice["question"].endswith(f"B. Under it {LETTER}")
    assert (choice["options"], choice["answer"]) == (["A", "B"], 1)
    images = sorted((tmp_path / "naturalbench_images").iterdir())
    assert len(images) == 7 and all(len(p.stem) == 16 and p.suffix == ".png" for p in images)


def test_naturalbench_retrieval_takes_the_metadata_list(tmp_path: Path) -> None:
    doc = imported(tmp_path, "naturalbench", FIXTURES / "naturalbench" / "metadata.json")
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["criterion"]) == (
        "naturalbench-retrieval",
        "group",
        "group",
    )
    assert test["examples"][1] == {
        "id": "1",
        "images": ["1_0.jpg", "1_1.jpg"],
        "captions": ["A red kite above a green field.", "A green kite above a red field."],
    }


def test_mmvp_mllm_form_is_told_apart_by_its_options(tmp_path: Path) -> None:
    doc = imported(tmp_path, "mmvp", FIXTURES / "mmvp_mllm", extra=("--scoring", "generate"))
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["scoring"], test["all_of"]) == (
        "mmvp-mllm",
        "choice",
        "generate",
        ["pair"],
    )
    assert test["threshold"] == pytest.approx((4 * 0.5 + 2 / 3) / 6, abs=1e-4)
    assert examples_of(doc, "mmvp-mllm")["6"] == {
        "id": "6",
        "image": "6.jpg",
        "question": "How many eyes can you see in the image?",
        "options": ["One", "Two", "None"],
        "answer": 1,
        "tags": {"pair": "5-6"},
    }


# ---------------------------------------------------------------- bad input: one line


def test_pope_bad_lines_are_file_line(tmp_path: Path, capsys) -> None:
    source = tmp_path / "coco_pope_popular.json"
    good = '{"question_id": 1, "image": "a.jpg", "text": "Is there a dog in the image?", '
    source.write_text(good + '"label": "yes"}\n' + good + '"label": "maybe"}\n')
    assert fails(capsys, tmp_path, "pope", source) == (
        f"vlcheck import: {source}:2: 'label' is 'maybe'; expected 'yes' or 'no'"
    )
    source.write_text(good + '"label": "yes"}\n{"question_id": 2, "image": \n')
    assert fails(capsys, tmp_path, "pope", source).startswith(
        f"vlcheck import: {source}:2: invalid JSON"
    )
    other = tmp_path / "pope_test.json"
    other.write_text(good + '"label": "yes"}\n')
    assert "not a POPE file" in fails(capsys, tmp_path, "pope", other)


def test_naturalbench_bad_records_are_one_line(tmp_path: Path, capsys) -> None:
    source = naturalbench_parquet(tmp_path / "nb.parquet", drop="Question_1")
    assert fails(capsys, tmp_path, "naturalbench", source) == (
        f"vlcheck import: {source}: no column 'Question_1'; expected Image_0, Image_1, "
        "Question_0, Question_1, Question_Type, Image_0_Question_0, Image_1_Question_0, "
        "Image_0_Question_1, Image_1_Question_1"
    )
    bad = [("yes_no", (1, 2), ("q?", "r?"), ("Yes", "No", "Maybe", "Yes"))]
    source = naturalbench_parquet(tmp_path / "nb.parquet", records=bad)
    assert fails(capsys, tmp_path, "naturalbench", source) == (
        f"vlcheck import: {source}: record 0: 'Image_0_Question_1' is 'Maybe'; a yes_no "
        "question's answer is Yes or No"
    )
    source = naturalbench_parquet(tmp_path / "nb.parquet", same_index=True)
    assert fails(capsys, tmp_path, "naturalbench", source) == (
        f"vlcheck import: {source}: record 7: this Index is given twice"
    )
    assert not (tmp_path / "never_images").exists()


def test_mmvp_mllm_bad_rows_are_file_line(tmp_path: Path, capsys) -> None:
    source = tmp_path / "Questions.csv"
    header = "Index,Question,Options,Correct Answer\n"
    source.write_text(header + "1,Open?,(a) Open (b) Closed,(a)\n2,Open?,Open or Closed,(b)\n")
    assert fails(capsys, tmp_path, "mmvp", source) == (
        f"vlcheck import: {source}:3: Options 'Open or Closed'; expected two or more lettered "
        "options in order, e.g. (a) Open (b) Closed"
    )
    source.write_text(header + "1,Open?,(a) Open (b) Closed,(c)\n2,Open?,(a) Open (b) Closed,(b)\n")
    assert fails(capsys, tmp_path, "mmvp", source).startswith(
        f"vlcheck import: {source}:2: Correct Answer '(c)'"
    )
    source.write_text("Index,Question,Options\n1,Open?,(a) Open (b) Closed\n")
    assert fails(capsys, tmp_path, "mmvp", source) == (
        f"vlcheck import: {source}:1: no column 'Correct Answer'; expected Index, Question, "
        "Options, Correct Answer"
    )
    vlm = FIXTURES / "mmvp" / "Questions.csv"
    assert "--scoring is for MMVP's MLLM form" in fails(
        capsys, tmp_path, "mmvp", vlm, extra=("--scoring", "letter")
    )


# ---------------------------------------------------------------- end to end, by hand


def _pope_answers() -> dict[tuple[int, str], dict[str, float]]:
    """Random split, images 1 (questions 1-3) and 2 (4-6): 1 yes (TP), 2 yes (FP), 3 a tie
    (label yes), 4 no (FN), 5 no (TN), 6 a tie (label no)."""
    said = {
        (1, "snowboard"): (-0.1, -2.0),
        (1, "car"): (-0.2, -1.0),
        (1, "person"): (-0.7, -0.7),
        (2, "dog"): (-3.0, -0.1),
        (2, "apple"): (-2.0, -0.3),
        (2, "kite"): (-1.5, -1.5),
    }
    article = {"apple": "an"}
    return {
        (code, f"Is there {article.get(thing, 'a')} {thing} in the image?"): {"Yes": y, "No": n}
        for (code, thing), (y, n) in said.items()
    }


def _naturalbench_answers() -> dict[tuple[int, str], dict[str, float]]:
    """What the model finds likelier, per record (q0_i0, q0_i1, q1_i0, q1_i1):
    record 0 Yes No Yes Yes (q1_i0 wrong); record 1 No Yes Yes, then a tie (wrong); record 3
    all right; the choice record A A B A (q0_i1 wrong)."""
    said = {
        0: ("Yes", "No", "Yes", "Yes"),
        1: ("No", "Yes", "Yes", None),
        2: ("A", "A", "B", "A"),
        3: ("Yes", "No", "No", "Yes"),
    }
    out: dict[tuple[int, str], dict[str, float]] = {}
    for index, (kind, codes, questions, _) in enumerate(NB_RECORDS):
        first, second = ("Yes", "No") if kind == "yes_no" else ("A", "B")
        suffix = YES_NO if kind == "yes_no" else LETTER
        for n, (q, i) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
            pick = said[index][n]
            scores = {first: -1.0, second: -1.0}
            if pick is not None:
                scores[pick] = -0.2
            out[codes[i], f"{questions[q]} {suffix}"] = scores
    return out


def _mmvp_answers() -> dict[tuple[int, str], dict[str, float]]:
    """Letters by image: 1 A (right), 2 B (right), 3 B (right), 4 B (wrong), 5 a tie between
    A and C (wrong: ties fail), 6 B (right). Pairs: 1-2 right, 3-4 and 5-6 wrong."""
    said = {code: {letter: -0.1} for code, letter in zip((1, 2, 3, 4, 6), "ABBBB", strict=True)}
    said[5] = {"A": -0.5, "C": -0.5}
    questions = {
        1: "Are the butterfly's wings",
        3: "Is the dog facing",
        5: "How many eyes",
    }
    return {(code, questions[code - 1 + code % 2]): said[code] for code in said}


RETRIEVAL_PAIRS = {  # record 0: both ways right; record 1: image 1 ties its captions
    (8, "A man rides a horse on a beach."): 0.9,
    (8, "A horse stands alone on a beach."): 0.1,
    (9, "A man rides a horse on a beach."): 0.2,
    (9, "A horse stands alone on a beach."): 0.8,
    (10, "A red kite above a green field."): 0.7,
    (10, "A green kite above a red field."): 0.3,
    (11, "A red kite above a green field."): 0.4,
    (11, "A green kite above a red field."): 0.4,
}


def _write_images(root: Path) -> None:
    for n in (1, 2):
        code_image(n, root / "coco" / f"COCO_val2014_{n:012d}.jpg", "JPEG")
    for n in range(1, 7):
        code_image(n, root / "MMVP Images" / f"{n}.jpg", "JPEG")
    for n, name in enumerate(["0_0", "0_1", "1_0", "1_1"], start=8):
        code_image(n, root / "retrieval" / f"{name}.jpg", "JPEG")


def test_the_authors_numbers_by_hand(pytester: pytest.Pytester) -> None:
    root = pytester.path
    _write_images(root)
    answers = {**_pope_answers(), **_naturalbench_answers(), **_mmvp_answers()}
    pytester.makepyfile(table=scorer_source(answers, RETRIEVAL_PAIRS))
    parquet = naturalbench_parquet(root / "nb.parquet")
    checklists = [
        import_into(root, "pope", str(FIXTURES / "pope"), "--image-root", "coco"),
        import_into(root, "naturalbench", str(parquet)),
        import_into(
            root / "retrieval",
            "naturalbench",
            str(FIXTURES / "naturalbench"),
            "--image-root",
            str(root / "retrieval"),
        ),
        import_into(root, "mmvp", str(FIXTURES / "mmvp_mllm"), "--image-root", "MMVP Images"),
    ]
    result = pytester.runpytest(
        *map(str, checklists), "--vl-model=py:table:make", "--vl-report=out",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    matrix = json.loads((root / "out" / "matrix.json").read_text(encoding="utf-8"))
    rows: dict[str, Any] = {row["test"]: row for row in matrix["results"]}

    # POPE random: TP 1, FP 1, TN 1, FN 1, and two ties (neither answer: wrong, not a yes)
    pope = rows["coco_pope_random"]
    assert (pope["n"], pope["passed"], pope["ties"]) == (6, 2, 2)
    assert pope["pass_rate"] == pytest.approx(2 / 6)  # accuracy
    metrics = pope["metrics"]
    assert metrics["yes_ratio"] == pytest.approx(2 / 6)
    assert metrics["precision"] == pytest.approx(1 / 2)  # TP / (TP + FP)
    assert metrics["recall"] == pytest.approx(1 / 3)  # TP / label yes (the tie a miss)
    assert metrics["f1"] == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    assert (rows["coco_pope_adversarial"]["n"], rows["coco_pope_adversarial"]["passed"]) == (2, 0)

    # NaturalBench yes/no: records 0 (3 of 4), 1 (3 of 4, a tie), 3 (4 of 4)
    yes_no = rows["naturalbench-yes_no"]
    assert (yes_no["n"], yes_no["passed"], yes_no["ties"]) == (12, 10, 1)
    assert yes_no["pass_rate"] == pytest.approx(10 / 12)  # Acc
    nb = yes_no["metrics"]
    assert nb["all_of_question"] == pytest.approx(4 / 6)  # Q-Acc: q0 of 0 and 1, both of 3
    assert nb["all_of_image"] == pytest.approx(4 / 6)  # I-Acc: i1 of 0, i0 of 1, both of 3
    assert nb["all_of_group"] == pytest.approx(1 / 3)  # G-Acc: record 3
    assert nb["all_of_group_groups"] == 3
    # a slice per source; none per record, question or image (the all_of tags)
    assert yes_no["slices"] == {
        "source": {
            "docci": {"n": 4, "passed": 3, "pass_rate": 0.75},
            "flickr": {"n": 8, "passed": 7, "pass_rate": 0.875},
        }
    }
    choice = rows["naturalbench-multiple_choice"]
    assert (choice["n"], choice["passed"]) == (4, 3)
    assert (choice["metrics"]["all_of_question"], choice["metrics"]["all_of_image"]) == (0.5, 0.5)
    assert choice["metrics"]["all_of_group"] == 0.0
    # the authors' overall numbers over the four records: each test's weighted by records
    overall = (10 / 12 * 3 + 3 / 4 * 1) / 4
    assert overall == pytest.approx(13 / 16)

    # retrieval: text score 1/2 (record 1's image 1 ties), image score 2/2, group 1/2
    retrieval = rows["naturalbench-retrieval"]["metrics"]
    assert (retrieval["text_score"], retrieval["image_score"]) == (0.5, 1.0)
    assert retrieval["group_score"] == 0.5

    # MMVP: 4 of 6 questions, 1 of 3 pairs
    mmvp = rows["mmvp-mllm"]
    assert (mmvp["n"], mmvp["passed"], mmvp["ties"]) == (6, 4, 1)
    assert mmvp["metrics"]["all_of_pair"] == pytest.approx(1 / 3)
    result.assert_outcomes(passed=4, failed=2)
