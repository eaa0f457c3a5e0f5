"""Several models in one run: each later ``--vl-model`` compared with the first, per test.

"Compare two checkpoints" without a baseline file: examples are paired by id, the change is
tested as the gate tests it (``metrics.clustered.paired_test``: the exact McNemar mid-p, the
clustered mid-p when paired examples share a cluster), and Holm adjusts the p-values over
every test x model compared in the run. It reports; it never changes an item's verdict.
Pure: no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeGuard

from pytest_vlcheck.metrics.clustered import paired_test
from pytest_vlcheck.metrics.paired import discordant_pairs, holm
from pytest_vlcheck.results import MEASURED, CapabilityResult
from pytest_vlcheck.results.blocks import ReferenceDelta

__all__ = ["reference_delta", "with_reference"]


def _measured(result: CapabilityResult | None) -> TypeGuard[CapabilityResult]:
    return result is not None and result.status in MEASURED and result.n > 0


def reference_delta(reference: CapabilityResult, other: CapabilityResult) -> ReferenceDelta:
    """``other`` against the reference model on the same test, before Holm (``p_holm`` None).

    ``p_value`` is None when no example id is shared (nothing to pair).
    """
    before = {o.id: o.correct for o in reference.outcomes}
    after = {o.id: o.correct for o in other.outcomes}
    n_paired, lost, gained = discordant_pairs(before, after)
    # each example's cluster as this run recorded it, else as the reference did
    clusters = {o.id: o.cluster for o in (*reference.outcomes, *other.outcomes) if o.cluster}
    decided = paired_test(before, after, clusters)
    # rounded like the gate's delta, so 0.48 vs 0.50 reads -2.0, not -2.0000000000000018
    delta = round(100.0 * ((other.pass_rate or 0.0) - (reference.pass_rate or 0.0)), 9)
    return ReferenceDelta(
        model=reference.model,
        delta_pts=delta,
        p_value=decided.p if n_paired else None,
        p_holm=None,
        n_paired=n_paired,
        discordant=(lost, gained),
        test=decided.test,
    )


def with_reference(
    results: Sequence[CapabilityResult], models: Sequence[str]
) -> list[CapabilityResult]:
    """``results`` (same order) with ``reference`` set on every measured result of a model
    after ``models[0]`` whose test the first model measured too; Holm runs over all of them."""
    if len(models) < 2:
        return list(results)
    first = {(r.file, r.test): r for r in results if r.model == models[0]}
    deltas: dict[int, ReferenceDelta] = {}
    for index, result in enumerate(results):
        ref = first.get((result.file, result.test))
        if result.model != models[0] and _measured(ref) and _measured(result):
            deltas[index] = reference_delta(ref, result)
    tested = {i: d.p_value for i, d in deltas.items() if d.p_value is not None}
    for i, p in zip(tested, holm(list(tested.values())), strict=True):
        deltas[i] = dataclasses.replace(deltas[i], p_holm=p)
    return [
        dataclasses.replace(r, reference=deltas[i]) if i in deltas else r
        for i, r in enumerate(results)
    ]
