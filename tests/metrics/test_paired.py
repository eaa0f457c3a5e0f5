"""metrics.paired, gates.decision and gates.wording: McNemar mid-p, Bonferroni, Holm and the
gate's verdicts, checked against hand computations (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from pytest_vlcheck.gates.baseline import BaselineEntry
from pytest_vlcheck.gates.decision import gate
from pytest_vlcheck.gates.wording import (
    gate_details,
    gate_verdict,
    power_note,
    pvalue,
    verdict_suffix,
)
from pytest_vlcheck.metrics.paired import (
    bonferroni,
    holm,
    mcnemar_midp,
    min_detectable_discordant,
)


def test_mcnemar_midp_against_hand_computations() -> None:
    # b=3, c=0: n=3, k=0; P(X=0) = 1/8; 2 * 1/8 - 1/8 = 1/8
    assert mcnemar_midp(3, 0) == 0.125
    # b=5, c=1: n=6, k=1; P(0) = 1/64, P(1) = 6/64; 2 * 7/64 - 6/64 = 8/64
    assert mcnemar_midp(5, 1) == 0.125
    # b=7, c=2: n=9, k=2; P(0..2) = (1 + 9 + 36)/512; 2 * 46/512 - 36/512 = 56/512
    assert mcnemar_midp(7, 2) == 56 / 512
    # b=10, c=0: 2**-10 = 1/1024
    assert mcnemar_midp(10, 0) == 1 / 1024
    # symmetric in b and c; no discordant pairs or b == c: no evidence at all
    assert mcnemar_midp(2, 7) == mcnemar_midp(7, 2)
    assert mcnemar_midp(0, 0) == 1.0
    assert mcnemar_midp(4, 4) == 1.0
    with pytest.raises(ValueError):
        mcnemar_midp(-1, 2)


def test_mcnemar_midp_is_exact_for_large_counts() -> None:
    # b=60, c=0: 2**-60, far below what float rounding of summed terms could resolve
    assert mcnemar_midp(60, 0) == 2.0**-60
    assert 0.0 < mcnemar_midp(900, 700) < 1e-6


def test_bonferroni() -> None:
    assert bonferroni(0.01, 3) == pytest.approx(0.03)  # 0.01 * 3
    assert bonferroni(0.4, 3) == 1.0  # 1.2 capped at 1
    assert bonferroni(0.2, 1) == 0.2
    with pytest.raises(ValueError):
        bonferroni(0.2, 0)


def test_holm_against_hand_computation() -> None:
    # sorted: 0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> max 0.06
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # 0.5 * 2 = 1.0; 0.6 * 1 = 0.6 -> kept monotone at 1.0
    assert holm([0.6, 0.5]) == [1.0, 1.0]
    assert holm([]) == []
    # Holm never exceeds Bonferroni
    ps = [0.001, 0.02, 0.2, 0.03]
    assert all(h <= bonferroni(p, len(ps)) for h, p in zip(holm(ps), ps, strict=True))


def test_min_detectable_discordant() -> None:
    # d discordant pairs one way: mid-p = 2**-d. alpha 0.05: 2**-4 = 0.0625, 2**-5 = 0.03125
    assert min_detectable_discordant(0.05) == 5
    # alpha 0.05 / 200 = 0.00025: 2**-11 = 0.000488, 2**-12 = 0.000244
    assert min_detectable_discordant(0.05 / 200) == 12
    with pytest.raises(ValueError):
        min_detectable_discordant(0.0)


def entry(outcomes: dict[str, bool], **kw) -> BaselineEntry:
    n = len(outcomes)
    passed = sum(outcomes.values())
    values = {
        "file": "checklists/a.yaml",
        "test": "color",
        "model": "ckpt-1000",
        "capability": "attribute/color",
        "task": "caption",
        "spec": "tiny",
        "fingerprint": "f1",
        "content_hash": "h1",
        "tool_version": "0.1.0",
        "git_commit": None,
        "conditions": {"precision": "fp32", "device": "cpu", "batch_size": 64},
        "numbers": {"n": n, "passed": passed, "pass_rate": passed / n},
    }
    values.update(kw)
    return BaselineEntry(outcomes=outcomes, **values)


def flipped(n: int, correct: int, lost: int, gained: int = 0) -> tuple[dict, dict]:
    """Baseline and current outcomes over ids e0..e{n-1}: the first ``correct`` right in the
    baseline; ``lost`` of those wrong now, ``gained`` of the wrong ones right now."""
    before = {f"e{i}": i < correct for i in range(n)}
    after = dict(before)
    for i in range(lost):
        after[f"e{i}"] = False
    for i in range(correct, correct + gained):
        after[f"e{i}"] = True
    return before, after


def rate(outcomes: dict[str, bool]) -> float:
    return sum(outcomes.values()) / len(outcomes)


def test_five_point_drop_over_three_discordant_of_sixty_is_not_significant() -> None:
    before, after = flipped(60, 30, lost=3)  # 50% -> 45%: -5 pts; mid-p 2**-3 = 0.125
    g = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert (g.b, g.c, g.n_matched) == (3, 0, 60)
    assert g.delta_pts == pytest.approx(-5.0)
    assert g.p_mid == 0.125
    assert not g.regressed and not g.improved


def test_significant_drop_regresses() -> None:
    before, after = flipped(60, 40, lost=10)  # 66.7% -> 50%; mid-p 2**-10
    g = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert g.regressed
    assert g.p_mid == 1 / 1024
    assert verdict_suffix(g) == (
        "(gate: regressed: dropped 16.7 pts, significant (McNemar mid-p 0.00098 < alpha/m 0.05; "
        "10 lost, 0 gained) vs baseline 66.7%)"
    )


def test_drop_not_more_than_max_drop_does_not_regress() -> None:
    # 200 -> 192 of 400: exactly -2.0 pts, mid-p 2**-8 = 0.0039 (significant)
    before, after = flipped(400, 200, lost=8)
    g = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert g.p_mid < 0.05 and g.delta_pts == -2.0
    assert not g.regressed
    assert gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=1.5).regressed


def test_correction_makes_a_borderline_drop_pass_with_many_tests() -> None:
    # 6 lost of 60: mid-p 2**-6 = 0.015625 < 0.05, but > 0.05 / 10 = 0.005
    before, after = flipped(60, 40, lost=6)
    alone = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    many = gate(after, rate(after), entry(before), m=10, alpha=0.05, max_drop_pts=2.0)
    assert alone.regressed and not many.regressed
    assert many.p_corrected == pytest.approx(0.15625)  # 0.015625 * 10
    # 0.005: 2**-7 = 0.0078 >= 0.005, 2**-8 = 0.0039 < 0.005 -> 8 examples of 60 = 13.3 pts
    assert many.min_detectable_drop_pts == pytest.approx(100 * 8 / 60)
    assert (
        "with no example gained, 8 lost examples (8/60 = 13.3 pts) would be significant at this "
        "m; each gained example raises that number"
    ) in gate_details(many)
    assert gate_verdict(many) == (
        "dropped 10.0 pts, not significant (McNemar mid-p 0.016 >= alpha/m 0.005; 6 lost, 0 gained)"
    )


def test_every_gate_verdict_in_words() -> None:
    """regressed / dropped, not significant / dropped less than --vl-max-drop / improved /
    unchanged, each with the test that decided it."""
    before, after = flipped(400, 200, lost=8)  # exactly -2.0 pts, mid-p 2**-8: significant
    small = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert gate_verdict(small) == (
        "dropped 2.0 pts, less than --vl-max-drop (McNemar mid-p 0.0039 < alpha/m 0.05; 8 lost, "
        "0 gained)"
    )
    before, after = flipped(60, 20, lost=0, gained=12)
    up = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert gate_verdict(up).startswith("improved: +20.0 pts, significant (McNemar mid-p ")
    before, after = flipped(60, 30, lost=1, gained=1)
    same = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert gate_verdict(same) == (
        "unchanged: 0.0 pts, no significant change (McNemar mid-p 1 >= alpha/m 0.05; 1 lost, "
        "1 gained)"
    )
    before, after = flipped(4, 4, lost=3)  # 3 of 4 lost: mid-p 2**-3 = 0.125 at best
    tiny = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert power_note(tiny) == (
        "too few examples to gate at this m: even all 4 paired examples lost would not be "
        "significant at alpha/m 0.05; add examples, gate fewer items, or raise --vl-alpha"
    )


def test_improvement_added_removed_and_warnings() -> None:
    before, after = flipped(60, 20, lost=0, gained=12)
    del after["e59"]
    after["new"] = True
    base = entry(before)
    g = gate(
        after,
        rate(after),
        base,
        m=1,
        alpha=0.05,
        max_drop_pts=2.0,
        content_hash="h2",
        conditions={"precision": "bf16", "device": "cpu", "batch_size": 64},
    )
    assert g.improved and not g.regressed
    assert (g.added, g.removed, g.n_matched) == (1, 1, 59)
    assert g.warnings == (
        "the test changed since the baseline (content hash differs)",
        "run conditions differ from the baseline: precision fp32 -> bf16",
    )


def test_too_small_to_gate() -> None:
    before, after = flipped(4, 4, lost=4)  # every example lost: mid-p 2**-4 = 0.0625
    g = gate(after, rate(after), entry(before), m=1, alpha=0.05, max_drop_pts=2.0)
    assert not g.regressed and g.min_detectable_drop_pts is None
    assert any(line.startswith("too few examples to gate") for line in gate_details(g))


def test_pvalue_text() -> None:
    assert [pvalue(p) for p in (0.018, 0.00031, 1.0, 1.2e-7)] == [
        "0.018",
        "0.00031",
        "1",
        "1.2e-07",
    ]
