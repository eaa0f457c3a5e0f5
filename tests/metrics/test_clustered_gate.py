"""The gate's clustered paired test (``metrics.clustered.paired_test``) against hand
computations, its wording, and the four cases of issue 41 at the level of ``gate``."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from test_paired import entry as paired_entry

from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.gates.decision import gate
from pytest_vlcheck.gates.wording import gate_details, gate_verdict, power_note
from pytest_vlcheck.metrics.clustered import (
    CLUSTERED,
    EXACT,
    FEW_CLUSTERS,
    clustered_midp,
    min_detectable_lost,
    paired_design_effect,
    paired_test,
)
from pytest_vlcheck.metrics.paired import mcnemar_midp
from pytest_vlcheck.results.blocks import GateComparison
from pytest_vlcheck.results.json_checks import JsonChecker, ReportFormatError
from pytest_vlcheck.run.settings import KeywordOptions, build_settings

# 18 examples on 6 images of 3; lost: all 3 of k1 and k2, 2 of k3; gained: 1 of k4
LOST = {"k1": 3, "k2": 3, "k3": 2}
GAINED = {"k4": 1}


def table() -> tuple[dict[str, bool], dict[str, bool], dict[str, str]]:
    """Baseline and current outcomes and clusters of the small table above."""
    before, after, clusters = {}, {}, {}
    for k in range(1, 7):
        for j in range(3):
            i = f"k{k}-{j}"
            clusters[i] = f"k{k}"
            lost, gained = j < LOST.get(f"k{k}", 0), j < GAINED.get(f"k{k}", 0)
            before[i], after[i] = not gained, not lost
    return before, after, clusters


def test_design_effect_and_p_by_hand() -> None:
    before, after, clusters = table()
    # d_i: k1 1 1 1, k2 1 1 1, k3 1 1 0, k4 -1 0 0, k5 and k6 0 0 0; n 18, B 8, C 1,
    # mean d = 7/18, so m_k d = 7/6 and D_k - m_k d = 11/6, 11/6, 5/6, -13/6, -7/6, -7/6:
    # between = 6/5 * (121 + 121 + 25 + 169 + 49 + 49) / 36 = 6/5 * 89/6 = 89/5
    # within = 18/17 * (B + C - n d^2) = 18/17 * (9 - 49/18) = 18/17 * 113/18 = 113/17
    # DEFF = (89/5) / (113/17) = 1513/565 = 2.678
    changes = {
        f"k{k}": [
            int(before[f"k{k}-{j}"] and not after[f"k{k}-{j}"])
            - int(after[f"k{k}-{j}"] and not before[f"k{k}-{j}"])
            for j in range(3)
        ]
        for k in range(1, 7)
    }
    assert paired_design_effect(changes) == Fraction(1513, 565)
    # effective counts 8 / 2.678 = 2.99 -> 3 and 1 / 2.678 = 0.37 -> 0: mid-p 2**-3 = 0.125,
    # above the exact mid-p of (8, 1), 2 * 10/512 - 9/512 = 11/512
    assert mcnemar_midp(8, 1) == 11 / 512
    decided = paired_test(before, after, clusters)
    assert decided == type(decided)(CLUSTERED, 0.125, Fraction(1513, 565), 6, changed_clusters=4)
    # the exact test's 5 lost (2**-5 < 0.05) at DEFF 2.678: the least d with d / DEFF
    # rounded half up >= 5 is ceil(4.5 * 1513/565) = ceil(12.05) = 13
    assert min_detectable_lost(0.05, Fraction(1513, 565)) == 13
    assert min_detectable_lost(0.05, 1.0) == 5
    assert paired_test(before, after, clusters, use_clusters=False) == type(decided)(
        EXACT, 11 / 512
    )


def test_rounding_is_half_up_and_never_looser_than_the_exact_test() -> None:
    # 5 / 2 = 2.5 -> 3 and 3 / 2 = 1.5 -> 2 (not banker's rounding to 2 and 2)
    assert clustered_midp(5, 3, Fraction(2)) == max(mcnemar_midp(3, 2), mcnemar_midp(5, 3))
    assert clustered_midp(5, 0, Fraction(2)) == 2**-3
    rng = np.random.default_rng(1)
    for _ in range(300):
        lost, gained = (int(x) for x in rng.integers(0, 30, 2))
        deff = Fraction(int(rng.integers(100, 400)), 100)
        assert clustered_midp(lost, gained, deff) >= mcnemar_midp(lost, gained)


def test_singleton_clusters_give_the_exact_mid_p_bit_for_bit() -> None:
    rng = np.random.default_rng(2)
    before = {f"e{i}": bool(x) for i, x in enumerate(rng.random(80) < 0.6)}
    after = {f"e{i}": bool(x) for i, x in enumerate(rng.random(80) < 0.5)}
    singles = {i: f"img{i}" for i in before}
    _, lost, gained = (
        0,
        sum(before[i] and not after[i] for i in before),
        sum(after[i] and not before[i] for i in before),
    )
    assert paired_test(before, after, singles).test == EXACT
    assert paired_test(before, after, singles).p == mcnemar_midp(lost, gained)
    # and the design effect itself is exactly 1 on singletons
    changes = {
        i: [int(before[i] and not after[i]) - int(after[i] and not before[i])] for i in before
    }
    assert paired_design_effect(changes) == 1


def outcomes(n: int, lost: set[int], gained: set[int], images: int):
    """Issue 41's cases: n examples on img{i % images}.png."""
    before = {str(i): i not in gained for i in range(n)}
    after = {str(i): i not in lost for i in range(n)}
    clusters = {str(i): f"img{i % images}.png" for i in range(n)}
    return before, after, clusters


def gated(n: int, lost: set[int], gained: set[int], images: int, m: int) -> GateComparison:
    before, after, clusters = outcomes(n, lost, gained, images)
    rate = sum(after.values()) / n
    return gate(
        after, rate, paired_entry(before), m=m, alpha=0.05, max_drop_pts=2.0, clusters=clusters
    )


def test_the_four_cases_of_the_issue() -> None:
    # 60 on 6 images, 20 lost (3-4 per image), m 6: Durkalski's p was 0.015 >= 0.0083;
    # the changes are spread evenly (DEFF floors at 1): mid-p 2**-20
    one = gated(60, set(range(20)), set(), 6, m=6)
    assert (one.test, one.p_mid, one.design_effect, one.regressed) == (CLUSTERED, 2**-20, 1.0, True)
    assert gate_verdict(one).startswith(
        "regressed: dropped 33.3 pts, significant (clustered mid-p 9.5e-07 < alpha/m 0.0083; "
        "20 lost, 0 gained in 6 clusters, design effect 1.00)"
    )
    # 100 on 6 images, 30 lost and 20 gained, m 2: the exact mid-p 0.16 is a floor
    two = gated(100, set(range(30)), set(range(30, 50)), 6, m=2)
    assert two.p_mid >= mcnemar_midp(30, 20) == pytest.approx(0.1608, abs=1e-4)
    assert not two.regressed
    # 40 on one image, 16 lost: one cluster cannot be tested, and the line says so
    three = gated(40, set(range(16)), set(), 1, m=1)
    assert (three.test, three.p_mid, three.regressed, three.min_detectable_drop_pts) == (
        FEW_CLUSTERS,
        1.0,
        False,
        None,
    )
    assert gate_verdict(three) == (
        "dropped 40.0 pts, not tested for significance: the 40 paired examples form 1 cluster "
        "(images, or values of the `cluster:` tag), fewer than the 5 the clustered test needs, "
        "so a change cannot be told from noise (16 lost, 0 gained); give the examples more "
        "images, group them with a `cluster:` tag, or gate them as independent with "
        "--vl-gate-clusters=off"
    )
    assert power_note(three).startswith("no number of lost examples can be significant here")
    # 40 on 6 images, 4 lost each on its own image: never looser than the exact 2**-4
    four = gated(40, {0, 1, 2, 3}, set(), 6, m=1)
    assert (four.test, four.p_mid, four.regressed) == (CLUSTERED, 0.0625, False)


def test_changes_in_one_cluster_of_many_are_not_tested() -> None:
    # 60 examples on 10 images; 6 lost, all on img3
    g = gated(60, {3, 13, 23, 33, 43, 53}, set(), 10, m=1)
    assert (g.test, g.clusters, g.regressed) == (FEW_CLUSTERS, 10, False)
    assert "the 6 lost and gained examples all sit in one of the 10 clusters" in gate_verdict(g)
    # a single change is no cluster question: the test runs (and cannot be significant)
    single = gated(60, {3}, set(), 10, m=1)
    assert single.test == CLUSTERED and single.p_mid == mcnemar_midp(1, 0)


def test_min_detectable_and_lost_ids_follow_the_deciding_test() -> None:
    before, after, clusters = table()
    g = gate(
        after, 9 / 18, paired_entry(before), m=1, alpha=0.05, max_drop_pts=2.0, clusters=clusters
    )
    assert g.min_detectable_drop_pts == pytest.approx(100 * 13 / 18)
    assert (
        "with no example gained, 13 lost examples (13/18 = 72.2 pts) would be significant at "
        "this m by the clustered test at the design effect measured here (2.68); each gained "
        "example raises that number"
    ) in gate_details(g)
    assert g.lost == ("k1-0", "k1-1", "k1-2", "k2-0", "k2-1", "k2-2", "k3-0", "k3-1")
    assert g.gained == ("k4-0",)
    assert "lost: k1-0, k1-1, k1-2, k2-0, k2-1, k2-2, k3-0, k3-1" in gate_details(g)
    assert "gained: k4-0" in gate_details(g)


def test_gate_block_round_trips_and_older_blocks_read() -> None:
    before, after, clusters = table()
    g = gate(
        after, 9 / 18, paired_entry(before), m=1, alpha=0.05, max_drop_pts=2.0, clusters=clusters
    )
    checker = JsonChecker("matrix.json", ReportFormatError)
    doc = g.to_json()
    assert doc["lost"][0] == "k1-0" and doc["clusters"] == 6
    assert GateComparison.from_json(checker, doc, "gate") == g
    # a block written before: no design_effect, clusters, lost, gained; it writes back unchanged
    old = {k: v for k, v in doc.items() if k not in ("design_effect", "clusters", "lost", "gained")}
    old["test"] = "clustered_mcnemar"
    read = GateComparison.from_json(checker, old, "gate")
    assert read.to_json() == old
    assert "clustered McNemar p 0.12" in gate_verdict(read)


def coin_per_image(rng: np.random.Generator, images: int, per_image: int, p_lost: float):
    """Outcomes where each example changes with probability 1/4, in the direction a coin
    per image decides (lost with probability ``p_lost``)."""
    before, after, clusters = {}, {}, {}
    for k in range(images):
        worse = rng.random() < p_lost
        for j, changed in enumerate(rng.random(per_image) < 0.25):
            i = f"{k}-{j}"
            clusters[i] = f"img{k}"
            before[i] = not (changed and not worse)
            after[i] = not (changed and worse)
    return before, after, clusters


def test_size_and_power_under_a_clustered_null_by_simulation() -> None:
    """30 images x 4 examples, a coin per image: the exact test (examples as independent)
    rejects about 12% of null items at 0.05, the clustered test about 5%; the design effect
    costs power, but a consistent drop is still found."""
    rng = np.random.default_rng(41)
    items = 600
    null = [paired_test(*coin_per_image(rng, 30, 4, 0.5)) for _ in range(items)]
    exact = [
        paired_test(*coin_per_image(rng, 30, 4, 0.5), use_clusters=False) for _ in range(items)
    ]
    size = sum(t.p < 0.05 for t in null) / items
    exact_size = sum(t.p < 0.05 for t in exact) / items
    # 600 items: a standard error of 0.9 points at 5%
    assert 0.025 <= size <= 0.075
    assert exact_size >= 0.09
    drops = [paired_test(*coin_per_image(rng, 30, 4, 0.9)) for _ in range(200)]
    assert sum(t.p < 0.05 for t in drops) / 200 >= 0.8


def test_gate_clusters_as_an_evaluate_keyword(tmp_path: Path) -> None:
    def use_clusters(**kw: str) -> bool:
        return build_settings(KeywordOptions(kw, tmp_path)).gates.use_clusters

    assert use_clusters() and not use_clusters(gate_clusters="off")
    with pytest.raises(SettingsError, match=r"gate_clusters is 'maybe'; expected one of"):
        use_clusters(gate_clusters="maybe")
