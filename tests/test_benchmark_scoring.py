"""Each benchmark scored the way its authors score it: SVO-Probes, ARO, VL-CheckList (issue 12).

The expected numbers are computed by hand from the authors' definitions, in the comments.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_vlcheck.metrics.aggregates import MacroAverage, macro_average
from pytest_vlcheck.metrics.choice import match_accuracies

# ---------------------------------------------------------------- match accuracies


def test_match_accuracies_count_an_example_in_every_type_it_carries() -> None:
    # p1 (right) is a positive paired with subject and verb negatives; p2 (wrong) with object.
    # n1 subject (right), n2 verb (wrong), n3 object (right), n4 object (wrong).
    correct = np.array([True, False, True, False, True, False])
    labels = np.array([True, True, False, False, False, False])
    types = [("subject", "verb"), ("object",), ("subject",), ("verb",), ("object",), ("object",)]
    out = match_accuracies(correct, labels, types)
    assert out["positive_accuracy"] == 1 / 2  # p1 of p1, p2
    assert out["negative_accuracy"] == 2 / 4  # n1, n3 of four
    assert out["average_accuracy"] == 1 / 2
    # subject: p1 right; n1 right -> 1, 1, 1
    assert out["neg_type=subject/positive_accuracy"] == 1.0
    assert out["neg_type=subject/average_accuracy"] == 1.0
    # verb: p1 right; n2 wrong -> 1, 0, 0.5
    assert out["neg_type=verb/positive_accuracy"] == 1.0
    assert out["neg_type=verb/negative_accuracy"] == 0.0
    assert out["neg_type=verb/average_accuracy"] == 0.5
    # object: p2 wrong; n3 right, n4 wrong -> 0, 0.5, 0.25
    assert out["neg_type=object/positive_accuracy"] == 0.0
    assert out["neg_type=object/negative_accuracy"] == 0.5
    assert out["neg_type=object/average_accuracy"] == 0.25
    assert len(out) == 12


def test_match_accuracies_untyped_examples_count_overall_only() -> None:
    out = match_accuracies(np.array([True, False]), np.array([True, False]), [(), ("verb",)])
    assert out == {
        "positive_accuracy": 1.0,
        "negative_accuracy": 0.0,
        "average_accuracy": 0.5,
        "neg_type=verb/negative_accuracy": 0.0,
    }
    with pytest.raises(ValueError, match="1 type tuples for 2 examples"):
        match_accuracies(np.array([True, False]), np.array([True, False]), [()])


# ---------------------------------------------------------------- macro average


def test_macro_average_weighs_every_value_the_same() -> None:
    # on: 3 of 4 right; under: 1 of 2; near: 0 of 1 (too few); behind: excluded; None: untagged
    values = ["on", "on", "on", "on", "under", "under", "near", "behind", None]
    correct = np.array([True, True, True, False, True, False, False, True, True])
    out = macro_average(correct, values, min_count=2, exclude=("behind",))
    assert out == MacroAverage(
        (3 / 4 + 1 / 2) / 2,
        {"on": (4, 3), "under": (2, 1)},
        {"behind": "excluded", "near": "n=1 < 2"},
    )
    # micro over the same qualifying examples would be 4/6: the macro mean is not that
    assert out.value == 0.625


def test_macro_average_defaults_and_nothing_qualifying() -> None:
    out = macro_average(np.array([True, False, False]), ["a", "b", "b"])
    assert out.value == (1.0 + 0.0) / 2 and out.left_out == {}
    empty = macro_average(np.array([True]), ["a"], min_count=25)
    assert empty == MacroAverage(None, {}, {"a": "n=1 < 25"})
    with pytest.raises(ValueError, match="2 tag values for 1 outcomes"):
        macro_average(np.array([True]), ["a", "b"])
    with pytest.raises(ValueError, match="min_count must be at least 1"):
        macro_average(np.array([True]), ["a"], min_count=0)
