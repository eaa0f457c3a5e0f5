"""NegBench and CREPE end to end: imported fixtures scored from a ``scores:`` file, the
accuracy and its slices against the authors' rule worked out by hand, ties included."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_importers_e2e import import_into, run_scored, scores_for

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
NEGBENCH = FIXTURES / "negbench" / "COCO_val_mcq_llama3.1_rephrased.csv"
NEGBENCH_TEST = "negbench-COCO_val_mcq_llama3.1_rephrased"
CREPE = FIXTURES / "crepe"


# s(image, option) in column order; NegBench takes the argmax, the first of tied maxima.
NEGBENCH_SCORES = {
    "0": [0.9, 0.1, 0.2, 0.3],  # answer 0 (positive): right
    "1": [0.2, 0.6, 0.6, 0.1],  # answer 2 (negative) ties column 1, which comes first: wrong
    "2": [0.3, 0.7, 0.2, 0.7],  # answer 1 (hybrid) ties column 3, which comes after: right
    "3": [0.1, 0.2, 0.3, 0.8],  # answer 3 (negative): right
}
NEGBENCH_ANSWERS = {"0": 0, "1": 2, "2": 1, "3": 3}  # the fixture's correct_answer column


def test_negbench_accuracy_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "negbench", str(NEGBENCH))

    def rule(test: str, example: str, i: int, j: int) -> float:
        answer = NEGBENCH_ANSWERS[example]
        columns = [answer, *(c for c in range(4) if c != answer)]  # caption, then negatives
        return NEGBENCH_SCORES[example][columns[j]]

    scores = scores_for(checklist, rule, pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows[NEGBENCH_TEST]
    # NegBench's accuracy (torch.argmax, the first maximum in column order) by hand: row 0
    # right, row 1 wrong (its answer, column 2, ties column 1, which comes first), row 2 right
    # (its answer, column 1, ties column 3, which comes after), row 3 right: 3/4, two rows
    # decided by a tie; positive 1/1, negative 1/2, hybrid 1/1. (Every tie wrong gave 2/4.)
    assert (row["n"], row["passed"], row["ties"]) == (4, 3, 2)
    templates = row["slices"]["template"]
    assert templates["positive"]["pass_rate"] == 1.0
    assert templates["negative"]["pass_rate"] == 0.5
    assert templates["hybrid"]["pass_rate"] == 1.0
    result.assert_outcomes(passed=1)  # 0.75 >= chance 0.25


# s(cropped image, text): the caption first, then the hard negatives.
CREPE_SCORES = {
    ("crepe-swap", "4-0"): [0.9, 0.1, 0.2, 0.3, 0.4, 0.5],  # right
    ("crepe-swap", "4-1"): [0.5, 0.5, 0.1, 0.1, 0.1, 0.1],  # a tie, the caption ranked first
    ("crepe-swap", "5-0"): [0.3, 0.2, 0.6, 0.1, 0.1, 0.1],  # wrong
    ("crepe-atom", "4-0"): [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],  # wrong
}


def test_crepe_recall_at_1_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "crepe", str(CREPE))
    scores = scores_for(
        checklist, lambda t, e, i, j: CREPE_SCORES[(t, e)][j], pytester.path / "s.jsonl"
    )
    assert '"crop": [10.0, 20.0, 100.0, 80.0]' in scores.read_text()
    result, rows = run_scored(pytester, checklist, scores)
    swap = rows["crepe-swap"]
    # CREPE's recall@1, the caption winning its ties (ties: first): 2/3, one decided by a
    # tie; complexity 4: 2/2, 5: 0/1.
    assert (swap["n"], swap["passed"], swap["ties"]) == (3, 2, 1)
    assert swap["pass_rate"] == pytest.approx(2 / 3)
    assert swap["slices"]["complexity"]["4"]["pass_rate"] == 1.0
    assert swap["slices"]["complexity"]["5"]["pass_rate"] == 0.0
    assert (rows["crepe-atom"]["n"], rows["crepe-atom"]["passed"]) == (1, 0)
    result.assert_outcomes(passed=1, failed=1)  # 2/3 >= chance 1/6; atom 0 < 1/6
