"""``vlcheck import`` on malformed numbers, nesting and names: one ``FILE:LINE`` line, exit
status 2, no traceback and no output file (the earlier one byte-identical)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_importers import FIXTURES, fails

from pytest_vlcheck.importers.common import MAX_DIGITS, whole_number
from pytest_vlcheck.nesting import TOO_DEEP

WALL = "9" * 5000  # more digits than Python's int() converts (4,300)


def test_whole_numbers_are_ascii_digits_of_a_bounded_length() -> None:
    assert whole_number("0") == 0 and whole_number("0042") == 42
    for text in ("²", "٣", "", "-1", "1.0", " 1", WALL, "1" * (MAX_DIGITS + 1)):
        assert whole_number(text) is None, text
    assert whole_number("1" * MAX_DIGITS) == int("1" * MAX_DIGITS)


def test_a_json_integer_of_thousands_of_digits_is_located(tmp_path: Path, capsys) -> None:
    text = (FIXTURES / "eqben" / "eqben_subset.json").read_text()
    bad = tmp_path / "eqben.json"
    bad.write_text(text.replace('"two cubes and one sphere"', WALL))
    line = text[: text.index('"two cubes')].count("\n") + 1
    assert fails(capsys, tmp_path, "eqben", bad) == (
        f"vlcheck import: {bad}:{line}: a whole number of 5000 digits; expected at most "
        f"{MAX_DIGITS}"
    )


@pytest.mark.parametrize("fmt", ["eqben", "aro"])
def test_json_nested_past_any_parsers_recursion_is_located(
    tmp_path: Path, capsys, fmt: str
) -> None:
    bad = tmp_path / "deep.json"
    bad.write_text('[\n{"caption0": ' + "[" * 100_000 + "]" * 100_000 + "}\n]\n")
    assert fails(capsys, tmp_path, fmt, bad) == f"vlcheck import: {bad}:2: {TOO_DEEP}"


def test_a_jsonl_line_nested_too_deep_is_located(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "winoground.jsonl"
    bad.write_text("\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    assert fails(capsys, tmp_path, "winoground", bad) == f"vlcheck import: {bad}:2: {TOO_DEEP}"


@pytest.mark.parametrize("question_id", ["²", WALL])
def test_mmvp_question_ids_that_isdigit_accepts(tmp_path: Path, capsys, question_id: str) -> None:
    source = tmp_path / "Questions.csv"
    source.write_text(f"Question ID,Type,Statement\n1,A,x\n{question_id},A,y\n")
    message = fails(capsys, tmp_path, "mmvp", source)
    assert message.startswith(f"vlcheck import: {source}:3: question id '{question_id[:5]}")
    assert message.endswith("is not a number")


@pytest.mark.parametrize("answer", ["²", WALL])
def test_negbench_answers_that_isdigit_accepts(tmp_path: Path, capsys, answer: str) -> None:
    original = FIXTURES / "negbench" / "COCO_val_mcq_llama3.1_rephrased.csv"
    bad = tmp_path / "mcq.csv"
    bad.write_text(original.read_text().replace(",0,positive", f",{answer},positive", 1))
    message = fails(capsys, tmp_path, "negbench", bad)
    assert message.startswith(f"vlcheck import: {bad}:2: 'correct_answer' is '{answer[:5]}")
    assert message.endswith("expected an option index 0-3")


def test_a_vismin_category_with_no_letter_is_located(tmp_path: Path, capsys) -> None:
    original = (FIXTURES / "vismin" / "vismin.csv").read_text()
    bad = tmp_path / "vismin.csv"
    bad.write_text(original.replace(",e2,object", ",e2,???", 1))
    assert fails(capsys, tmp_path, "vismin", bad) == (
        f"vlcheck import: {bad}:3: category '???' has no letter or digit; expected a name a "
        "capability can be made of ([a-z0-9_])"
    )


def test_an_aro_id_given_twice_is_reported_at_its_source_record(tmp_path: Path, capsys) -> None:
    """Earlier it was found only in the built checklist (``OUT.yaml:15``)."""
    record = json.loads((FIXTURES / "aro" / "flickr_order_options.json").read_text())[0]
    bad = tmp_path / "flickr_order.json"
    bad.write_text(json.dumps([{**record, "id": 7}, {**record, "id": 8}, {**record, "id": 7}]))
    assert fails(capsys, tmp_path, "aro", bad) == (
        f"vlcheck import: {bad}: record 2: id '7' repeats record 0"
    )


def test_the_command_exits_2_and_keeps_the_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    out.write_text("earlier\n")
    bad = tmp_path / "Questions.csv"
    bad.write_text("Question ID,Type,Statement\n²,A,x\n2,A,y\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_vlcheck.cli", "import", "mmvp", str(bad), "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 2
    assert done.stderr == f"vlcheck import: {bad}:2: question id '²' is not a number\n"
    assert out.read_text() == "earlier\n"
