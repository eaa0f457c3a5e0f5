"""Intervals and paired tests for examples that share a cluster (several captions of one image).

A pass rate's Wilson interval treats examples as independent; SugarCrepe, VALSE and
VL-CheckList ask several questions of one image, whose outcomes go together. Following Miller
(2024, "Adding Error Bars to Evals: A Statistical Approach to Language Model Evaluations",
section 2.2, the clustered standard error), the variance of the mean over clusters c of
outcomes x_ic is

    Var_C = sum_c (sum_i (x_ic - p))^2 / n^2,

and the design effect DEFF = Var_C / Var_iid = sum_c (S_c - m_c p)^2 / (n p (1 - p)), which is
1 + rho * (sum_c m_c^2 / n - 1) for the pairwise intra-cluster correlation rho (Kish). The
clustered interval is the Wilson interval at the effective size n / DEFF; a DEFF below 1 (a
negative correlation) is taken as 1, so clustering never narrows the interval. With every
cluster a single example, DEFF is 1 and the interval is the plain one, exactly.

Two runs of one test paired by example are compared by the exact McNemar mid-p adjusted for
the design effect of the paired differences (the Rao-Scott idea, as Eliasziw and Donner
(1991) applied it to McNemar's test for clustered matched pairs; ``clustered_paired_test``):
with d_i = 1 for an example lost, -1 for one gained, 0 otherwise, D_k its sum over cluster k
of m_k examples, n examples and K clusters, and d = (B - C) / n,

    DEFF = [K / (K - 1) * sum_k (D_k - m_k d)^2] / [n / (n - 1) * sum_i (d_i - d)^2],

the cluster-robust variance of the mean difference (with the K / (K - 1) small-sample factor
of inspect's ``stderr(cluster=)`` and statsmodels) over the unbiased independent one, at
least 1. The test is the exact mid-p on the effective counts B / DEFF and C / DEFF (rounded
half up), and never smaller than the exact mid-p on B and C: never looser than the test for
independent examples, and not capped by K (Durkalski's chi2 = (B - C)^2 / sum_k (b_k - c_k)^2,
which the gate used before, is at most K and looser than the exact test when DEFF < 1). With
every cluster one example DEFF is exactly 1.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from pytest_vlcheck.metrics.paired import (
    flipped,
    mcnemar_midp,
    min_detectable_discordant,
)

__all__ = [
    "CLUSTERED",
    "EXACT",
    "FEW_CLUSTERS",
    "MIN_CLUSTERS",
    "ClusteredInterval",
    "PairedTest",
    "clustered_interval",
    "clustered_midp",
    "min_detectable_lost",
    "paired_design_effect",
    "paired_test",
]


@dataclass(frozen=True)
class ClusteredInterval:
    """The Wilson interval at n / DEFF: ``low``, ``high``, how many ``clusters`` and the
    ``design_effect`` used (at least 1)."""

    low: float
    high: float
    clusters: int
    design_effect: float


def design_effect(correct: Sequence[bool], clusters: Sequence[Hashable]) -> float:
    """DEFF = sum_c (S_c - m_c p)^2 / (n p (1 - p)), at least 1; exactly 1 when every cluster
    holds one example or every outcome is the same (no variance to inflate)."""
    if len(correct) != len(clusters):
        raise ValueError(f"{len(clusters)} cluster keys for {len(correct)} outcomes")
    n = len(correct)
    sums: dict[Hashable, list[int]] = {}
    for ok, cluster in zip(correct, clusters, strict=True):
        cell = sums.setdefault(cluster, [0, 0])
        cell[0] += 1
        cell[1] += int(bool(ok))
    passed = sum(s for _, s in sums.values())
    if len(sums) == n or passed in (0, n):
        return 1.0
    p = passed / n
    between = sum((s - m * p) ** 2 for m, s in sums.values())
    return max(1.0, between / (n * p * (1 - p)))


def clustered_interval(correct: Sequence[bool], clusters: Sequence[Hashable]) -> ClusteredInterval:
    """The 95% Wilson interval of the pass rate at the effective size n / DEFF."""
    # choice loads numpy: the gate, which the plugin imports in every run, needs none of it
    from pytest_vlcheck.metrics.choice import wilson_interval, wilson_interval_at

    n, passed = len(correct), sum(bool(ok) for ok in correct)
    deff = design_effect(correct, clusters)
    count = len(set(clusters))
    if deff == 1.0:
        low, high = wilson_interval(passed, n)
    else:
        low, high = wilson_interval_at(passed / n, n / deff)
    return ClusteredInterval(low, high, count, deff)


MIN_CLUSTERS = 5
"""The fewest clusters among the paired examples the clustered test estimates a design
effect from (its variance has K - 1 degrees of freedom); with fewer, or with every lost and
gained example in one cluster, the gate says it cannot tell a change from noise."""

EXACT = "mcnemar_midp"
CLUSTERED = "clustered_midp"
FEW_CLUSTERS = "few_clusters"


@dataclass(frozen=True)
class PairedTest:
    """The test that decides a change between two runs paired by example: ``test`` names it
    (``EXACT``, ``CLUSTERED`` or ``FEW_CLUSTERS``, whose ``p`` is 1: nothing can be
    concluded), ``p`` its two-sided p-value, ``design_effect`` the DEFF its counts were
    divided by (1 for the exact test), ``clusters`` the clusters of the paired examples and
    ``changed_clusters`` those holding a lost or gained example (0 for the exact test)."""

    test: str
    p: float
    design_effect: Fraction = Fraction(1)
    clusters: int = 0
    changed_clusters: int = 0


def _half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))


def paired_design_effect(changes: Mapping[Hashable, Sequence[int]]) -> Fraction:
    """DEFF of the paired differences, at least 1 (module docstring): ``changes`` maps each
    cluster to its examples' d_i (1 lost, -1 gained, 0 unchanged). Exact arithmetic, so that
    all-singleton clusters give exactly 1."""
    k = len(changes)
    sizes = [len(c) for c in changes.values()]
    sums = [sum(c) for c in changes.values()]
    n, total = sum(sizes), sum(sums)
    if n < 2 or k < 2:
        return Fraction(1)
    mean = Fraction(total, n)
    # sum_i (d_i - d)^2 = sum_i d_i^2 - n d^2, and d_i^2 = |d_i|
    squares = sum(abs(d) for c in changes.values() for d in c)
    within = Fraction(n, n - 1) * (squares - total * mean)
    if within == 0:  # every example changed alike: no variance to inflate
        return Fraction(1)
    # sum_k (D_k - m_k d)^2 = sum_k D_k^2 - 2 d sum_k m_k D_k + d^2 sum_k m_k^2
    spread = (
        sum(s * s for s in sums)
        - 2 * mean * sum(m * s for m, s in zip(sizes, sums, strict=True))
        + mean * mean * sum(m * m for m in sizes)
    )
    return max(Fraction(1), Fraction(k, k - 1) * spread / within)


def clustered_midp(lost: int, gained: int, design_effect: Fraction) -> float:
    """The exact mid-p on the effective counts lost / DEFF and gained / DEFF (rounded half
    up), never below the exact mid-p on ``lost`` and ``gained``."""
    adjusted = mcnemar_midp(_half_up(lost / design_effect), _half_up(gained / design_effect))
    return max(adjusted, mcnemar_midp(lost, gained))


def min_detectable_lost(alpha_corrected: float, design_effect: Fraction | float) -> int:
    """The fewest lost examples (none gained) significant at ``alpha_corrected`` when their
    count is divided by ``design_effect``: the least d with d / DEFF rounded half up at least
    the exact test's ``min_detectable_discordant``."""
    needed = min_detectable_discordant(alpha_corrected)
    deff = Fraction(design_effect)
    return max(needed, math.ceil((needed - Fraction(1, 2)) * deff))


def paired_test(
    reference: Mapping[str, bool],
    other: Mapping[str, bool],
    clusters: Mapping[str, Hashable],
    *,
    use_clusters: bool = True,
) -> PairedTest:
    """The test of the change from ``reference`` to ``other`` over the examples both scored:
    the exact mid-p when no two of them share a cluster (``clusters``: example id -> cluster,
    an id without one its own), ``use_clusters`` is off or nothing changed (p is 1 whatever
    the clustering); else the design-effect-adjusted
    mid-p, or ``FEW_CLUSTERS`` when the examples form fewer than ``MIN_CLUSTERS`` clusters or
    two or more changes all sit in one cluster."""
    paired, lost_ids, gained_ids = flipped(reference, other)
    lost, gained = len(lost_ids), len(gained_ids)
    keys = [clusters.get(i, ("example", i)) for i in paired]
    if not use_clusters or len(set(keys)) == len(keys) or lost + gained == 0:
        return PairedTest(EXACT, mcnemar_midp(lost, gained))
    changes: dict[Hashable, list[int]] = {}
    for example, key in zip(paired, keys, strict=True):
        before, after = reference[example], other[example]
        changes.setdefault(key, []).append(int(before and not after) - int(after and not before))
    changed = sum(1 for c in changes.values() if any(c))
    if len(changes) < MIN_CLUSTERS or (changed == 1 and lost + gained > 1):
        return PairedTest(FEW_CLUSTERS, 1.0, Fraction(1), len(changes), changed)
    deff = paired_design_effect(changes)
    p = clustered_midp(lost, gained, deff)
    return PairedTest(CLUSTERED, p, deff, len(changes), changed)
