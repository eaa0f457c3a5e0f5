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

Two runs of one test paired by example are compared within clusters by Durkalski et al.'s
(2003) clustered McNemar: with b_k, c_k the examples of cluster k lost and gained,
chi2 = (B - C)^2 / sum_k (b_k - c_k)^2 on one degree of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from pytest_vlcheck.metrics.choice import wilson_interval, wilson_interval_at

__all__ = ["ClusteredInterval", "clustered_interval", "clustered_mcnemar", "has_shared_clusters"]


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
    n, passed = len(correct), sum(bool(ok) for ok in correct)
    deff = design_effect(correct, clusters)
    count = len(set(clusters))
    if deff == 1.0:
        low, high = wilson_interval(passed, n)
    else:
        low, high = wilson_interval_at(passed / n, n / deff)
    return ClusteredInterval(low, high, count, deff)


def has_shared_clusters(clusters: Mapping[str, Hashable], ids: Sequence[str]) -> bool:
    """Whether two of ``ids`` share a cluster (ids without one are their own)."""
    keys = [clusters.get(i, ("example", i)) for i in ids]
    return len(set(keys)) < len(keys)


def clustered_mcnemar(
    reference: Mapping[str, bool], other: Mapping[str, bool], clusters: Mapping[str, Hashable]
) -> float:
    """Durkalski's clustered McNemar p-value for the examples both runs scored.

    Per cluster k, b_k examples right in ``reference`` and wrong in ``other`` and c_k the
    reverse; chi2 = (B - C)^2 / sum_k (b_k - c_k)^2 and p = P(chi2_1 >= chi2) =
    erfc(sqrt(chi2 / 2)). 1 when nothing changed or the changes cancel in every cluster.
    """
    diffs: dict[Hashable, int] = {}
    for example in other:
        if example not in reference or reference[example] == other[example]:
            continue
        key = clusters.get(example, ("example", example))
        diffs[key] = diffs.get(key, 0) + (1 if reference[example] else -1)
    total = sum(diffs.values())
    spread = sum(d * d for d in diffs.values())
    if total == 0 or spread == 0:
        return 1.0
    statistic = total * total / spread
    return math.erfc(math.sqrt(statistic / 2))
