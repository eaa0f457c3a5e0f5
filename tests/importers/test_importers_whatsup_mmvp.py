"""What'sUp and MMVP-VLM end to end: fixtures in the authors' formats, scored from a
``scores:`` file, the authors' accuracies worked out by hand (ties included): What'sUp's
argmax with the first of tied maxima, pair and set accuracy; MMVP's image 1 above 0.5 (a tie
picks image 2) and pair accuracy."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into, run_scored, scores_for

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"

# s(image, caption option) by example id (the record's index), options in file order.
CONTROLLED = {
    "0": [0.9, 0.1, 0.1, 0.1],  # mug left of plate: right
    "1": [0.5, 0.5, 0.2, 0.1],  # mug right of plate: tied with option 2, argmax first: right
    "2": [0.2, 0.6, 0.1, 0.1],  # mug on plate: wrong
    "3": [0.7, 0.1, 0.1, 0.1],  # mug under plate: right
    **{str(i): [0.8, 0.1, 0.1, 0.1] for i in range(4, 8)},  # cup and book: all right
}
QA = {"0": [0.6, 0.4], "1": [0.3, 0.3], "2": [0.2, 0.5]}  # right, a tie (right), wrong


def test_whatsup_shape_and_tags(tmp_path: Path) -> None:
    doc = imported(tmp_path, "whatsup", FIXTURES / "whatsup")
    tests = {t["id"]: t for t in doc["tests"]}
    assert list(tests) == ["controlled_images_dataset", "coco_qa_two_obj"]
    controlled = tests["controlled_images_dataset"]
    assert (controlled["ties"], controlled["all_of"]) == ("first", ["pair", "set"])
    assert controlled["capability"] == "relation/spatial"
    assert examples_of(doc, "controlled_images_dataset")["1"] == {
        "id": "1",
        "image": "controlled_images/mug_right_of_plate.jpeg",
        "caption": "A mug to the right of a plate",
        "negatives": ["A mug to the left of a plate", "A mug on a plate", "A mug under a plate"],
        "tags": {
            "preposition": "right_of",
            "prepositions": "left-right",
            "pair": "mug|plate|left-right",
            "set": "mug|plate",
        },
    }
    qa = examples_of(doc, "coco_qa_two_obj")
    assert qa["0"]["image"] == "val2017/000000000001.jpg"
    assert [qa[k]["tags"]["preposition"] for k in "012"] == ["left", "above", "below"]


def test_whatsup_accuracy_pair_and_set_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "whatsup", str(FIXTURES / "whatsup"))
    table = {"controlled_images_dataset": CONTROLLED, "coco_qa_two_obj": QA}
    scores = scores_for(checklist, lambda t, e, i, j: table[t][e][j], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    controlled = rows["controlled_images_dataset"]
    # 7 of 8 right (one by a tie); pairs: mug|plate on-under lost -> 3 of 4; sets: 1 of 2
    assert (controlled["n"], controlled["passed"], controlled["ties"]) == (8, 7, 1)
    assert controlled["metrics"]["all_of_pair"] == pytest.approx(3 / 4)
    assert controlled["metrics"]["all_of_set"] == pytest.approx(1 / 2)
    prepositions = controlled["slices"]["preposition"]
    assert prepositions["on"]["pass_rate"] == 0.5 and prepositions["right_of"]["pass_rate"] == 1
    # pair accuracy per preposition group: left-right 2 of 2 pairs, on-under 1 of 2; a set
    # holds both groups, so sets count under mixed (1 of 2)
    pairs = controlled["all_of_slices"]["pair"]["prepositions"]
    assert pairs == {
        "left-right": {"groups": 2, "passed": 2, "rate": 1.0},
        "on-under": {"groups": 2, "passed": 1, "rate": 0.5},
    }
    assert controlled["all_of_slices"]["set"]["prepositions"] == {
        "mixed": {"groups": 2, "passed": 1, "rate": 0.5}
    }
    qa = rows["coco_qa_two_obj"]
    assert (qa["n"], qa["passed"], qa["ties"]) == (3, 2, 1)
    result.assert_outcomes(passed=2)


def test_whatsup_file_names_that_do_not_parse_are_source_errors(tmp_path: Path, capsys) -> None:
    source = tmp_path / "controlled_clevr_dataset.json"
    source.write_text(
        '[\n  {"image_path": "b/cube_left_of_ball.jpeg", "caption_options": ["a", "b"]},\n'
        '  {"image_path": "b/cube_on_ball.jpeg", "caption_options": ["a", "b"]}\n]'
    )
    err = fails(capsys, tmp_path, "whatsup", source)
    assert "controlled_clevr_dataset.json:3: image 'b/cube_on_ball.jpeg'" in err
    assert "in-front_of, behind" in err
    odd = tmp_path / "other.json"
    odd.write_text("[]")
    assert "not a What'sUp file" in fails(capsys, tmp_path, "whatsup", odd)


# s(image 1, statement), s(image 2, statement) per question id.
MMVP = {1: (0.6, 0.4), 2: (0.5, 0.5), 3: (0.5, 0.5), 4: (0.2, 0.7), 5: (0.7, 0.3), 6: (0.6, 0.4)}


def test_mmvp_shape(tmp_path: Path) -> None:
    doc = imported(tmp_path, "mmvp", FIXTURES / "mmvp")
    (test,) = doc["tests"]
    assert (test["id"], test["task"], test["all_of"]) == ("mmvp", "image", ["pair"])
    examples = examples_of(doc, "mmvp")
    assert examples["1"] == {
        "id": "1",
        "text": "a photo of The dog is facing left",
        "image": "Orientation/1.jpg",
        "distractors": ["Orientation/2.jpg"],
        "tags": {"pair": "1-2", "pattern": "Orientation"},
    }
    assert examples["2"]["image"] == "Orientation/2.jpg" and examples["2"]["ties"] == "first"


def test_mmvp_statement_and_pair_accuracy_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "mmvp", str(FIXTURES / "mmvp"))

    def rule(test: str, example: str, i: int, j: int) -> float:
        qid = int(example)
        image_1, image_2 = MMVP[qid]
        true, other = (image_1, image_2) if qid % 2 else (image_2, image_1)
        return (true, other)[i]

    scores = scores_for(checklist, rule, pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["mmvp"]
    # image 1 chosen only above 0.5: 1 right, 2 right (tie -> image 2), 3 wrong (tie), 4 right,
    # 5 right, 6 wrong: 4 of 6; pairs 1-2 right, 3-4 and 5-6 not: 1 of 3
    assert (row["n"], row["passed"], row["ties"]) == (6, 4, 2)
    assert row["metrics"]["all_of_pair"] == pytest.approx(1 / 3)
    assert row["slices"]["pattern"]["Orientation"]["pass_rate"] == 1.0
    assert row["slices"]["pattern"]["Color"]["pass_rate"] == 0.5
    # the authors' output, pair accuracy per pattern: Orientation 1 of 1, Color 0 of 2
    assert row["all_of_slices"]["pair"]["pattern"] == {
        "Color": {"groups": 2, "passed": 0, "rate": 0.0},
        "Orientation": {"groups": 1, "passed": 1, "rate": 1.0},
    }
    # every statement its own text, so its own cluster: the clustered interval is the plain one
    assert (row["clusters"], row["design_effect"]) == (6, 1.0)
    assert (row["ci_low_clustered"], row["ci_high_clustered"]) == (row["ci_low"], row["ci_high"])
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("1,A,x\n2,A,y\n3,A,z\n", "Questions.csv:4: 3 statements; expected pairs of two"),
        ("1,A,x\n2,B,y\n", "Questions.csv:3: pattern type 'B' differs from its pair's 'A'"),
        ("1,A,x\n3,A,y\n", "Questions.csv:3: ids 1 and 3: expected a pair of consecutive ids"),
        ("one,A,x\n2,A,y\n", "Questions.csv:2: question id 'one' is not a number"),
    ],
)
def test_mmvp_bad_rows_are_reported_at_their_line(
    tmp_path: Path, capsys, rows: str, message: str
) -> None:
    source = tmp_path / "Questions.csv"
    source.write_text("Question ID,Type,Statement\n" + rows)
    assert message in fails(capsys, tmp_path, "mmvp", source)
