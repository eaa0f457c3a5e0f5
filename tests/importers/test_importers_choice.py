"""NegBench and CREPE: a caption among several options; fixtures in the authors' formats,
their errors located at the source line, and the accuracy worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_importers import examples_of, fails, imported

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
NEGBENCH = FIXTURES / "negbench" / "COCO_val_mcq_llama3.1_rephrased.csv"
NEGBENCH_TEST = "negbench-COCO_val_mcq_llama3.1_rephrased"
CREPE = FIXTURES / "crepe"
CREPE_SWAP_4 = CREPE / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv"


def test_negbench_the_answer_is_the_caption_the_rest_in_column_order(tmp_path: Path) -> None:
    doc = imported(tmp_path, "negbench", NEGBENCH)
    (test,) = doc["tests"]
    assert (test["id"], test["capability"], test["threshold"]) == (
        NEGBENCH_TEST,
        "negation/multiple_choice",
        0.25,
    )
    example = examples_of(doc, NEGBENCH_TEST)["1"]
    assert example == {
        "id": "1",
        "image": "val2017/000000000285.jpg",
        "caption": "A tree but no bear.",
        "negatives": ["A bear and a tree.", "A bear but no grass.", "A bear and no tree."],
        "tags": {"template": "negative", "answer": "2"},
        "position": 2,
    }
    first = examples_of(doc, NEGBENCH_TEST)["0"]
    assert first["negatives"][1] == "A room with a television, but no chairs."  # quoted cell
    assert "position" not in first  # column 0 is the default place
    assert test["ties"] == "order"  # answers in other columns than 0: argmax in column order


def test_negbench_answers_all_in_column_0_read_ties_first(tmp_path: Path) -> None:
    """The released files put every answer in column 0: ``ties: first`` is argmax there."""
    rows = NEGBENCH.read_text(encoding="utf-8").splitlines()
    released = tmp_path / "released.csv"
    released.write_text("\n".join(rows[:2]) + "\n", encoding="utf-8")
    (test,) = imported(tmp_path, "negbench", released)["tests"]
    assert test["ties"] == "first"
    assert all("position" not in example for example in test["examples"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ((",0,positive", ",4,positive"), "'correct_answer' is '4'; expected an option index 0-3"),
        ((",0,positive", ",zero,positive"), "'correct_answer' is 'zero'"),
        ((",0,positive", ",0,affirmed"), "'correct_answer_template' is 'affirmed'"),
        ((",0,positive", ",0"), "6 values; the header has 7"),
        (("A room with a television and chairs.", ""), "field 'caption_0' must be a non-empty"),
    ],
)
def test_negbench_bad_row_is_reported_at_its_line(
    tmp_path: Path, capsys, change: tuple[str, str], message: str
) -> None:
    bad = tmp_path / "mcq.csv"
    bad.write_text(NEGBENCH.read_text().replace(*change, 1), encoding="utf-8")
    assert fails(capsys, tmp_path, "negbench", bad).startswith(
        f"vlcheck import: {bad}:2: {message}"
    )


def test_crepe_one_test_per_type_cropped_sliced_by_complexity(tmp_path: Path) -> None:
    doc = imported(tmp_path, "crepe", CREPE)
    assert [(t["id"], t["capability"]) for t in doc["tests"]] == [
        ("crepe-atom", "productivity/atom"),
        ("crepe-swap", "productivity/swap"),
    ]
    swap = examples_of(doc, "crepe-swap")
    assert list(swap) == ["4-0", "4-1", "5-0"]
    assert swap["4-0"]["image"] == {"path": "2344.jpg", "crop": [10.0, 20.0, 100.0, 80.0]}
    assert swap["4-0"]["negatives"][3] == "a horse's man riding brown"  # a literal, not eval
    assert swap["5-0"]["tags"] == {"complexity": "5"}
    assert swap["4-1"]["image"]["crop"] == [0.0, 0.0, 50.5, 60.0]


@pytest.mark.parametrize(
    ("change", "replacement", "message"),
    [
        ("2345,0,0,50.5,60,", "2345,0,0,nan,60,", "'width' must be a finite number >= 0"),
        ("2345,0,0,50.5,60,", "2345,-3,0,50.5,60,", "'x' must be a finite number >= 0"),
        ("2345,0,0,50.5,60,", "2345,0,0,50.5,0,", "the box is empty"),
        ("2345,0,0,50.5,60,", ",0,0,50.5,60,", "field 'image_id' must be a non-empty"),
        ("['a mat on a red dog',", "[__import__('os'),", "'hard_negs' is not a Python list"),
        ("'a dog a on red mat']", "'a dog a on red mat'", "'hard_negs' is not a Python list"),
        (
            "\"['a mat on a red dog', 'a red dog on a mat', 'a dog red on a mat', "
            "'on a dog a red mat', 'a dog a on red mat']\"",
            "'[]'",
            "'hard_negs' must list one",
        ),
    ],
)
def test_crepe_bad_row_is_reported_at_its_line(
    tmp_path: Path, capsys, change: str, replacement: str, message: str
) -> None:
    folder = tmp_path / "swap"
    folder.mkdir()
    bad = folder / CREPE_SWAP_4.name
    text = CREPE_SWAP_4.read_text()
    assert change in text
    bad.write_text(text.replace(change, replacement, 1), encoding="utf-8")
    assert fails(capsys, tmp_path, "crepe", bad).startswith(f"vlcheck import: {bad}:3: {message}")


def test_crepe_file_names_say_type_and_complexity(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "swap_4.csv"
    bad.write_text(CREPE_SWAP_4.read_text(), encoding="utf-8")
    assert "not a CREPE productivity file" in fails(capsys, tmp_path, "crepe", bad)
