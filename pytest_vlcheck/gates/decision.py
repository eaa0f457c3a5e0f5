"""The regression gate: one test x model of a run against its baseline entry.

A test fails the gate when it dropped by more than ``max_drop_pts`` percentage points AND the
paired test on the examples matched by id (exact McNemar mid-p) is below ``alpha / m``, where
``m`` counts the tests x models gated in the whole selection. Bonferroni keeps each verdict a
function of its own item, so serial runs, ``-n N`` and CI shards agree; Holm is for reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.baseline import CONDITION_KEYS, BaselineEntry
from pytest_vlcheck.metrics.paired import (
    bonferroni,
    discordant_pairs,
    holm,
    mcnemar_midp,
    min_detectable_discordant,
)

__all__ = [
    "GateResult",
    "gate",
    "gate_details",
    "gate_of",
    "holm",
    "pvalue",
    "verdict_suffix",
]


@dataclass(frozen=True)
class GateResult:
    """What the gate measured for one item; ``b``: examples lost, ``c``: examples gained.

    ``min_detectable_drop_pts`` is None when even every matched example flipping to wrong
    could not reach significance (the test is too small to gate on at this m).
    """

    delta_pts: float
    baseline_rate: float
    current_rate: float
    n_matched: int
    b: int
    c: int
    p_mid: float
    p_corrected: float
    alpha_corrected: float
    regressed: bool
    improved: bool
    added: int
    removed: int
    min_detectable_drop_pts: float | None
    warnings: tuple[str, ...] = ()


def _condition_warnings(entry: BaselineEntry, conditions: Mapping[str, object] | None) -> list[str]:
    if conditions is None:
        return []
    differ = [
        f"{k} {entry.conditions.get(k)!s} -> {conditions.get(k)!s}"
        for k in CONDITION_KEYS
        if entry.conditions.get(k) != conditions.get(k)
    ]
    if not differ:
        return []
    return ["run conditions differ from the baseline: " + ", ".join(differ)]


def gate(
    current_outcomes: Mapping[str, bool],
    current_rate: float,
    entry: BaselineEntry,
    *,
    m: int,
    alpha: float,
    max_drop_pts: float,
    content_hash: str | None = None,
    conditions: Mapping[str, object] | None = None,
) -> GateResult:
    """Compare one item with its baseline entry (examples paired by id).

    ``content_hash`` and ``conditions`` are the current run's; when given and different from
    the entry's they become warnings (a changed test, a bf16 run against an fp32 baseline).
    """
    if m < 1:
        raise ValueError(f"m counts the items gated in the run, at least 1, got {m}")
    n_matched, b, c = discordant_pairs(entry.outcomes, current_outcomes)
    p_mid = mcnemar_midp(b, c)
    alpha_corrected = alpha / m
    baseline_rate = entry.pass_rate if entry.pass_rate is not None else 0.0
    # rounded so that a drop of exactly max_drop_pts (0.48 vs 0.50) is not "more" by 2e-15
    delta_pts = round(100.0 * (current_rate - baseline_rate), 9)
    significant = p_mid < alpha_corrected
    d = min_detectable_discordant(alpha_corrected)
    warnings = []
    if content_hash is not None and content_hash != entry.content_hash:
        warnings.append("the test changed since the baseline (content hash differs)")
    if not n_matched:
        warnings.append("no example ids match the baseline's")
    warnings += _condition_warnings(entry, conditions)
    return GateResult(
        delta_pts=delta_pts,
        baseline_rate=baseline_rate,
        current_rate=current_rate,
        n_matched=n_matched,
        b=b,
        c=c,
        p_mid=p_mid,
        p_corrected=bonferroni(p_mid, m),
        alpha_corrected=alpha_corrected,
        regressed=significant and b > c and -delta_pts > max_drop_pts,
        improved=significant and c > b and delta_pts > max_drop_pts,
        added=sum(1 for i in current_outcomes if i not in entry.outcomes),
        removed=sum(1 for i in entry.outcomes if i not in current_outcomes),
        min_detectable_drop_pts=100.0 * d / n_matched if d <= n_matched else None,
        warnings=tuple(warnings),
    )


def pvalue(p: float) -> str:
    """A p-value with two significant digits: ``0.018``, ``0.0003``, ``1.2e-07``, ``1``."""
    return f"{p:.2g}"


def _pts(delta: float) -> str:
    """Signed points with one decimal, rounded half-up like every other report number."""
    text = fmt.pct(delta / 100)[:-1]
    return text if text.startswith("-") or text == "0.0" else "+" + text


def verdict_suffix(g: GateResult) -> str:
    """The gate's part of the verdict line:
    ``(-12.5 pts vs baseline 53.7%, McNemar mid-p 0.0003, corrected 0.018)``."""
    return (
        f"({_pts(g.delta_pts)} pts vs baseline {fmt.pct(g.baseline_rate)}, "
        f"McNemar mid-p {pvalue(g.p_mid)}, corrected {pvalue(g.p_corrected)})"
    )


def gate_details(g: GateResult) -> list[str]:
    """Further lines for a verdict: discordant pairs, added/removed examples, the smallest
    detectable drop, and the warnings."""
    lines = [f"{g.n_matched} examples matched: {g.b} lost, {g.c} gained since the baseline"]
    if g.added or g.removed:
        lines.append(f"{g.added} examples added, {g.removed} removed since the baseline")
    if g.min_detectable_drop_pts is None:
        lines.append(
            f"too few examples to gate: no drop is significant at alpha {pvalue(g.alpha_corrected)}"
        )
    else:
        lines.append(
            f"smallest detectable drop: {fmt.pct(g.min_detectable_drop_pts / 100)[:-1]} pts "
            f"(at alpha {pvalue(g.alpha_corrected)})"
        )
    lines += [f"warning: {w}" for w in g.warnings]
    return lines


def gate_of(result: Mapping[str, Any]) -> GateResult | None:
    """The ``GateResult`` a result row carries, if it was gated."""
    raw = result.get("gate") or {}
    if "p_mid" not in raw:
        return None
    names = {f.name for f in dataclasses.fields(GateResult)}
    values = {k: v for k, v in raw.items() if k in names}
    values["warnings"] = tuple(values.get("warnings", ()))
    return GateResult(**values)
