"""Clustered intervals and the clustered paired test against hand computations."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_vlcheck import metrics
from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.engine.judging.extras import cluster_keys
from pytest_vlcheck.metrics.aggregates import MIXED, all_of_slices
from pytest_vlcheck.metrics.clustered import clustered_interval, design_effect
from pytest_vlcheck.metrics.word_order import reordered_share
from pytest_vlcheck.tasks import get_task


def test_design_effect_and_interval_by_hand() -> None:
    # clusters A: right, right; B: wrong, wrong; C: right, wrong. n = 6, p = 1/2.
    correct = [True, True, False, False, True, False]
    clusters = ["A", "A", "B", "B", "C", "C"]
    # sum_c (S_c - m_c p)^2 = (2 - 1)^2 + (0 - 1)^2 + (1 - 1)^2 = 2; n p (1 - p) = 1.5
    assert design_effect(correct, clusters) == pytest.approx(4 / 3)
    interval = clustered_interval(correct, clusters)
    # Wilson at p = 0.5, n_eff = 6 / (4/3) = 4.5: centre 0.5, half-width
    # 1.96 sqrt(0.25 / 4.5 + 1.96^2 / (4 * 4.5^2)) / (1 + 1.96^2 / 4.5) = 0.3393
    z2 = metrics.Z95**2
    half = metrics.Z95 * math.sqrt(0.25 / 4.5 + z2 / (4 * 4.5**2)) / (1 + z2 / 4.5)
    assert (interval.low, interval.high) == pytest.approx((0.5 - half, 0.5 + half))
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.1607, 0.8393)
    assert (interval.clusters, interval.design_effect) == (3, pytest.approx(4 / 3))
    plain = metrics.wilson_interval(3, 6)
    assert interval.low < plain[0] and interval.high > plain[1]  # wider than independent


def test_singleton_clusters_give_todays_interval_exactly() -> None:
    rng = np.random.default_rng(0)
    correct = [bool(x) for x in rng.random(97) < 0.37]
    interval = clustered_interval(correct, [str(i) for i in range(97)])
    assert interval.design_effect == 1.0
    assert (interval.low, interval.high) == metrics.wilson_interval(sum(correct), 97)


def test_negative_correlation_does_not_narrow_and_constant_outcomes_are_deff_1() -> None:
    # every cluster one right and one wrong: the between-cluster sum is 0, DEFF floors at 1
    assert design_effect([True, False, True, False], ["a", "a", "b", "b"]) == 1.0
    assert design_effect([True, True, True], ["a", "a", "b"]) == 1.0


def test_all_of_slices_by_pattern_and_mixed() -> None:
    # pairs p1, p2 under pattern X (p1 both right, p2 one wrong), p3 under Y (both right),
    # p4 whose members differ in pattern (mixed, right); p5 unscored is left out
    correct = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0], dtype=bool)
    groups = ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4", "p5"]
    tags = [{"pattern": v, "pair": g} for v, g in zip("XXXXYYXYX", groups, strict=True)]
    out = all_of_slices(correct, groups, tags, unscored={"p5"}, skip={"pair"})
    assert out == {
        "pattern": {
            MIXED: {"groups": 1, "passed": 1, "rate": 1.0},
            "X": {"groups": 2, "passed": 1, "rate": 0.5},
            "Y": {"groups": 1, "passed": 1, "rate": 1.0},
        }
    }


CLUSTERED = """\
vlcheck: 1
tests:
  - id: t
    capability: attribute/color
    task: caption
    threshold: 0.5
    cluster: scene
    examples:
      - {id: a, image: x.jpg, caption: red, negatives: [der], tags: {scene: s1}}
      - {id: b, image: y.jpg, caption: red, negatives: [blue], tags: {scene: s1}}
      - {id: c, image: x.jpg, caption: red, negatives: [blue]}
  - id: u
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {id: a, image: x.jpg, caption: a red b, negatives: [b red a, blue]}
      - {id: b, image: {path: x.jpg, crop: [0, 0, 2, 2]}, caption: red, negatives: [blue]}
      - {id: c, image: y.jpg, caption: red, negatives: [blue]}
"""


def test_clusters_from_a_tag_or_the_task_kind(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTERED, encoding="utf-8")
    tagged, by_image = load_checklist(path).tests
    caption = get_task("caption")
    # cluster: scene: a and b share s1; c has no scene tag, so it is its own cluster
    assert cluster_keys(tagged, caption, tagged.examples) == ["tag:s1", "tag:s1", "example:c"]
    # a caption test's cluster is the image's file: a crop of x.jpg is in x.jpg's cluster
    keys = cluster_keys(by_image, caption, by_image.examples)
    assert keys[0] == keys[1] != keys[2]
    # the blind ceiling: only u's example a has a negative made of its caption's words
    assert reordered_share([caption.text_choices(e) for e in by_image.examples]) == 1 / 3
    assert reordered_share([caption.text_choices(e) for e in tagged.examples]) == 0.0


def test_a_cluster_tag_no_example_carries_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTERED.replace("cluster: scene", "cluster: place"), encoding="utf-8")
    with pytest.raises(ChecklistError, match="'cluster' names the tag 'place', which no example"):
        load_checklist(path)
