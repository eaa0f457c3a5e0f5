"""Paired statistics for regression gates: exact McNemar (mid-p) and multiple-test corrections.

Two runs of the same test are paired by example id; only the discordant examples (right in one
run, wrong in the other) carry information about a change. Pure functions on counts and
p-values, computed with exact integer arithmetic so that small p-values are not rounding noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

__all__ = [
    "bonferroni",
    "change_mark",
    "discordant_pairs",
    "flipped",
    "holm",
    "mcnemar_midp",
    "min_detectable_discordant",
]


def flipped(
    reference: Mapping[str, bool], other: Mapping[str, bool]
) -> tuple[list[str], list[str], list[str]]:
    """``(paired, lost, gained)`` example ids: those both runs scored, those right in the
    reference and wrong in ``other``, and those wrong in the reference and right in ``other``
    (in ``other``'s order)."""
    paired = [i for i in other if i in reference]
    lost = [i for i in paired if reference[i] and not other[i]]
    gained = [i for i in paired if not reference[i] and other[i]]
    return paired, lost, gained


def discordant_pairs(
    reference: Mapping[str, bool], other: Mapping[str, bool]
) -> tuple[int, int, int]:
    """``(n_paired, lost, gained)``: how many ids ``flipped`` finds of each."""
    paired, lost, gained = flipped(reference, other)
    return len(paired), len(lost), len(gained)


def mcnemar_midp(b: int, c: int) -> float:
    """Two-sided exact McNemar mid-p for ``b`` and ``c`` discordant pairs.

    With X ~ Bin(b + c, 1/2) and k = min(b, c): ``2 * P(X <= k) - P(X = k)`` (the exact
    two-sided p minus the probability of the observed table). The mid-p keeps the exact test's
    validity in practice while removing most of its conservatism (Fagerland et al. 2013);
    it is 1 when b == c and when there are no discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    term = tail = 1  # comb(n, 0); the next term is comb(n, i + 1) = comb(n, i) * (n - i) / (i + 1)
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    # 2 * P(X <= k) - P(X = k), with every probability counted in units of 2**-n
    return float(min(Fraction(1), Fraction(2 * tail - term, 2**n)))


def bonferroni(p: float, m: int) -> float:
    """Bonferroni-adjusted p-value for one of ``m`` tests: ``min(1, p * m)``."""
    if m < 1:
        raise ValueError(f"the number of tests must be at least 1, got {m}")
    return min(1.0, p * m)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (0-based) gets ``(m - i) * p``, made monotone with a
    running maximum and capped at 1. Uniformly more powerful than Bonferroni, but an item's
    value depends on the others, so it serves reports, not per-item verdicts.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def min_detectable_discordant(alpha_corrected: float) -> int:
    """The fewest discordant pairs, all in one direction, whose mid-p is below ``alpha``.

    With b = d and c = 0 the mid-p is P(X = 0) = 2**-d, so this is the smallest d with
    2**-d < alpha: a test with fewer examples than this can never fail a gate.
    """
    if not 0 < alpha_corrected <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha_corrected}")
    d = 1
    while mcnemar_midp(d, 0) >= alpha_corrected:
        d += 1
    return d


def change_mark(
    delta_pts: float | None, p_mid: float | None, m: int, *, alpha: float, max_drop_pts: float
) -> str:
    """The one rule behind every ▼ and ▲: ``drop`` or ``gain`` when the paired mid-p is below
    ``alpha / m`` (Bonferroni over the ``m`` comparisons shown together, as the gate corrects
    over the items it gates) and the change is more than ``max_drop_pts`` points; else ``""``.
    A drop the gate calls noise is never marked, one it calls a regression always is."""
    if delta_pts is None or p_mid is None or m < 1 or abs(delta_pts) <= max_drop_pts:
        return ""
    if p_mid >= alpha / m:
        return ""
    return "drop" if delta_pts < 0 else "gain"
