"""Metrics against hand-computed values from the papers' definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_vlcheck import metrics


def test_wilson_interval_matches_hand_computation() -> None:
    # p = 245/400, z = 1.96: centre = (p + z^2/800) / (1 + z^2/400), half-width as below.
    z = metrics.Z95
    p, n = 245 / 400, 400
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = metrics.wilson_interval(245, 400)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert (round(100 * low, 1), round(100 * high, 1)) == (56.4, 65.9)  # the example


def test_wilson_interval_edges() -> None:
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)
    low, high = metrics.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = metrics.wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)


def test_beats_all_is_strict_and_fails_nan() -> None:
    true = np.array([0.3, 0.3, 0.3, np.nan, 0.5], dtype=np.float32)
    others = metrics.pad_rows([[0.2, 0.1], [0.3], [0.31, 0.1], [0.1], [np.nan]])
    assert metrics.beats_all(true, others).tolist() == [True, False, False, False, False]


def test_beats_all_tie_rules() -> None:
    # rows: a clear win, a tie with the best other, a loss, a NaN
    true = np.array([0.3, 0.3, 0.3, np.nan], dtype=np.float32)
    others = metrics.pad_rows([[0.2, 0.1], [0.3, 0.1], [0.31], [0.1]])
    # the true candidate is listed first: `first` gives it the tie, `last` the later other
    assert metrics.beats_all(true, others, ties="first").tolist() == [True, True, False, False]
    assert metrics.beats_all(true, others, ties="last").tolist() == [True, False, False, False]
    assert metrics.beats_all(true, others, ties="fail").tolist() == [True, False, False, False]
    assert metrics.decided_by_tie(true, others).tolist() == [False, True, False, False]
    with pytest.raises(ValueError, match="ties is 'random'"):
        metrics.beats_all(true, others, ties="random")


def test_beats_in_order_is_argmax_in_column_order() -> None:
    # the columns of each row, the true one at `positions`: argmax picks the first maximum
    true = np.array([0.5, 0.5, 0.5, 0.5, 0.5, np.nan], dtype=np.float32)
    others = metrics.pad_rows(
        [
            [0.5, 0.1, 0.1],  # true at 0 ties column 1 (after it): argmax = 0, right
            [0.5, 0.1, 0.1],  # true at 1 ties column 0 (before it): argmax = 0, wrong
            [0.1, 0.1, 0.5],  # true at 1 ties column 3 (after it): argmax = 1, right
            [0.1, 0.5],  # true at 2 (last) ties column 1: argmax = 1, wrong
            [0.1, 0.6, 0.1],  # true at 3 below column 2: wrong whatever the order
            [0.1, 0.1, 0.1],  # NaN: wrong
        ]
    )
    positions = np.array([0, 1, 1, 2, 3, 0])
    assert metrics.beats_in_order(true, others, positions).tolist() == [
        True,
        False,
        True,
        False,
        False,
        False,
    ]
    # position 0 everywhere is ties: first
    zeros = np.zeros(6, dtype=int)
    assert (
        metrics.beats_in_order(true, others, zeros).tolist()
        == metrics.beats_all(true, others, ties="first").tolist()
    )


def test_top_set_chance_is_one_over_the_binomial() -> None:
    # 1 true of 3: 1/3; 2 true of 4: 1/6; 3 true of 5: 1/10
    assert metrics.top_set_chance([3, 4, 5], [1, 2, 3]) == pytest.approx(
        (1 / 3 + 1 / 6 + 1 / 10) / 3
    )
    assert metrics.top_set_chance([], []) == 0.0


def test_pad_rows_pads_with_minus_infinity() -> None:
    padded = metrics.pad_rows([[1.0], [2.0, 3.0]])
    assert padded.shape == (2, 2) and padded[0, 1] == -np.inf
    true = np.array([0.0, 5.0], dtype=np.float32)
    assert metrics.beats_all(true, padded).tolist() == [False, True]


def test_prompt_ensemble_is_mean_similarity() -> None:
    scores = np.array([[0.2, 0.4, 0.9], [0.5, 0.5, 0.5]], dtype=np.float32)
    assert metrics.prompt_ensemble(scores).tolist() == pytest.approx([0.5, 0.5])
    # the true image (row 0) ties the distractor on the mean: a tie fails
    ens = metrics.prompt_ensemble(scores)
    assert not metrics.beats_all(ens[:1], ens[None, 1:])[0]


def test_group_scores_winoground_definitions() -> None:
    # s[i, j] = s(image_i, caption_j)
    both = [[0.9, 0.1], [0.2, 0.8]]  # text and image right
    text_only = [
        [0.5, 0.4],
        [0.6, 0.7],
    ]  # each image prefers its caption; caption 0 prefers image 1
    image_only = [
        [0.5, 0.6],
        [0.4, 0.7],
    ]  # image 0 prefers caption 1; each caption prefers its image
    tie = [[0.5, 0.5], [0.1, 0.9]]
    out = metrics.group_outcomes(np.array([both, text_only, image_only, tie], dtype=np.float32))
    assert out["text"].tolist() == [True, True, False, False]
    assert out["image"].tolist() == [True, False, True, True]
    assert out["group"].tolist() == [True, False, False, False]


def test_predicate_noun_pair_metric_needs_both_triplets() -> None:
    # pair ([I1,S1,S2],[I2,S2,S1]): 1 iff s(I1,S1) > s(I1,S2) and s(I2,S2) > s(I2,S1)
    pairs = np.array(
        [
            [[0.6, 0.4], [0.3, 0.7]],  # both right -> 1
            [[0.6, 0.4], [0.8, 0.7]],  # second triplet wrong -> 0
            [[0.4, 0.6], [0.8, 0.7]],  # both wrong -> 0
            [[0.6, 0.4], [0.2, 0.9]],  # both right -> 1
        ],
        dtype=np.float32,
    )
    assert metrics.group_outcomes(pairs)["text"].mean() == 0.5
    assert metrics.group_caption_choices(pairs).mean() == 5 / 8


def test_match_correct_at_cutoff() -> None:
    scores = np.array([0.5, 0.49, 0.5, 0.2, np.nan], dtype=np.float32)
    labels = np.array([True, True, False, False, False])
    assert metrics.match_correct(scores, labels, 0.5).tolist() == [True, False, False, True, False]


def test_match_accuracies_svo_probes_average() -> None:
    correct = np.array([True, True, False, True, False, False, True, True])
    labels = np.array([True, True, True, False, False, False, True, False])
    names = ["verb", "verb", "subject", "verb", "verb", "subject", "subject", "subject"]
    types = [(name,) for name in names]
    out = metrics.match_accuracies(correct, labels, types)
    assert out["positive_accuracy"] == 3 / 4
    assert out["negative_accuracy"] == 2 / 4
    assert out["average_accuracy"] == (3 / 4 + 2 / 4) / 2
    assert out["neg_type=verb/positive_accuracy"] == 1.0
    assert out["neg_type=verb/negative_accuracy"] == 0.5
    assert out["neg_type=subject/positive_accuracy"] == 0.5
    assert out["neg_type=subject/negative_accuracy"] == 0.5
    assert out["neg_type=subject/average_accuracy"] == 0.5


def test_match_accuracies_omit_empty_sides() -> None:
    out = metrics.match_accuracies(np.array([True]), np.array([True]), [()])
    assert out == {"positive_accuracy": 1.0}


def test_chance_levels() -> None:
    assert metrics.choice_chance([2, 4]) == (1 / 2 + 1 / 4) / 2
    assert metrics.GROUP_CHANCE == {"text": 0.25, "image": 0.25, "group": 1 / 6}


def test_slice_rates_by_tag_value() -> None:
    correct = np.array([True, False, True, True])
    tags = [{"size": "small"}, {"size": "small", "color": "red"}, {"size": "large"}, {}]
    assert metrics.slice_rates(correct, tags) == {
        "color": {"red": {"n": 1, "passed": 0, "pass_rate": 0.0}},
        "size": {
            "large": {"n": 1, "passed": 1, "pass_rate": 1.0},
            "small": {"n": 2, "passed": 1, "pass_rate": 0.5},
        },
    }
