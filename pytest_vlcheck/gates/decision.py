"""The gate decision: compare one item with its baseline entry and settle its verdict.

Examples are paired by id; the change is tested with the exact McNemar mid-p (adjusted for
the design effect when paired examples share a cluster, e.g. an image:
``metrics.clustered.paired_test``), Bonferroni-corrected over ``m``, the items gated in the
whole selection (``gates.counting``). Too few clusters to test is not a regression.
Bonferroni keeps each verdict a function of its own item, so serial runs, ``-n N`` and CI
shards agree; Holm is for reports. An item regresses on a significant drop of more than
``max_drop_pts``. An item whose examples share no id with its entry cannot be paired, so it
is not gated (a ``GateWarning`` says why), like an item without an entry. Pure: no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.gates.baseline import Baseline, BaselineEntry, Grid, with_defaults
from pytest_vlcheck.metrics.clustered import FEW_CLUSTERS, min_detectable_lost, paired_test
from pytest_vlcheck.metrics.paired import bonferroni, flipped
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning
from pytest_vlcheck.results.samples import finite_rows
from pytest_vlcheck.results.verdict import settled

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MAX_DROP",
    "FLIPPED_SHOWN",
    "GATE_CLUSTERS",
    "GateSettings",
    "apply_gate",
    "entry_of",
    "gate",
]

DEFAULT_MAX_DROP = 2.0
DEFAULT_ALPHA = 0.05
NO_ENTRY = "no baseline entry for this test"
FLIPPED_SHOWN = 10
"""How many lost (and gained) examples the gate's lines name and keep the scores of."""
GATE_CLUSTERS = ("on", "off")
"""``--vl-gate-clusters``: test with the clustered mid-p when examples share a cluster, or not."""


@dataclass(frozen=True)
class GateSettings:
    """``--vl-baseline`` and its companions."""

    baseline: Baseline | None = None
    baseline_model: str | None = None
    max_drop_pts: float = DEFAULT_MAX_DROP
    alpha: float = DEFAULT_ALPHA
    gate_only: bool = False
    use_clusters: bool = True
    """``--vl-gate-clusters``: off gates the examples as independent (the exact mid-p)."""


def entry_of(settings: GateSettings, file: str, test: str, model: str) -> BaselineEntry | None:
    """The baseline entry a test x model is gated against, if any."""
    if settings.baseline is None:
        return None
    return settings.baseline.entry_for(file, test, model, settings.baseline_model)


def _condition_warnings(entry: BaselineEntry, conditions: Mapping[str, object] | None) -> list[str]:
    if conditions is None:
        return []
    saved, now = with_defaults(entry.conditions), with_defaults(conditions)
    differ = [f"{k} {saved[k]!s} -> {now[k]!s}" for k in saved if saved[k] != now[k]]
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
    clusters: Mapping[str, str] | None = None,
    use_clusters: bool = True,
    current_scores: Mapping[str, Grid] | None = None,
) -> GateComparison:
    """Compare one item with its baseline entry (examples paired by id).

    ``content_hash`` and ``conditions`` are the current run's; when given and different from
    the entry's they become warnings (a changed test, a bf16 run against an fp32 baseline).
    ``apply_gate`` calls it only when some example id pairs (otherwise it does not gate).
    ``clusters`` (example id -> cluster) makes the test the clustered mid-p when two paired
    examples share a cluster, unless ``use_clusters`` is off. ``min_detectable_drop_pts``
    is the same test's, at the design effect measured here. ``current_scores`` (example id
    -> scores) and the entry's saved scores are kept for the first ``FLIPPED_SHOWN`` lost and
    gained examples, so a report shows what they scored before and now.
    """
    if m < 1:
        raise ValueError(f"m counts the items gated in the run, at least 1, got {m}")
    paired, lost, gained = flipped(entry.outcomes, current_outcomes)
    n_matched, b, c = len(paired), len(lost), len(gained)
    decided = paired_test(
        entry.outcomes, current_outcomes, clusters or {}, use_clusters=use_clusters
    )
    p_mid = decided.p
    alpha_corrected = alpha / m
    baseline_rate = entry.pass_rate if entry.pass_rate is not None else 0.0
    # rounded so that a drop of exactly max_drop_pts (0.48 vs 0.50) is not "more" by 2e-15
    delta_pts = round(100.0 * (current_rate - baseline_rate), 9)
    significant = p_mid < alpha_corrected
    d = min_detectable_lost(alpha_corrected, decided.design_effect)
    if decided.test == FEW_CLUSTERS:
        d = n_matched + 1
    warnings = []
    if content_hash is not None and content_hash != entry.content_hash:
        warnings.append("the test changed since the baseline (content hash differs)")
    warnings += _condition_warnings(entry, conditions)
    return GateComparison(
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
        baseline_model=entry.model,
        test=decided.test,
        design_effect=float(decided.design_effect),
        clusters=decided.clusters,
        lost=tuple(lost),
        gained=tuple(gained),
        scores=_flipped_scores(entry, current_scores or {}, lost, gained),
    )


def _flipped_scores(
    entry: BaselineEntry, now: Mapping[str, Grid], lost: list[str], gained: list[str]
) -> dict[str, dict[str, Grid]]:
    """``{id: {"now": ..., "baseline": ...}}`` for the first lost and gained examples shown,
    each side where it is known (today's always from a run; the baseline's when saved)."""
    out: dict[str, dict[str, Grid]] = {}
    for example in (*lost[:FLIPPED_SHOWN], *gained[:FLIPPED_SHOWN]):
        if example not in now:
            continue
        out[example] = {"now": finite_rows(now[example])}
        if example in entry.scores:
            out[example]["baseline"] = finite_rows(entry.scores[example])
    return out


def _unpaired(entry: BaselineEntry, n_current: int) -> str:
    """Why an item with an entry is not gated: no example id to pair."""
    return (
        f"no example id in common with the baseline entry of {entry.model} "
        f"({len(entry.outcomes)} ids there, {n_current} here): nothing to pair"
    )


def _not_gated(result: CapabilityResult, why: str, settings: GateSettings) -> CapabilityResult:
    """The result with the reason it is not gated; under ``gate_only`` a threshold miss does
    not fail it either (only a gate fails items there, and none applies)."""
    return settled(dataclasses.replace(result, gate=GateWarning(why)), gate_only=settings.gate_only)


def apply_gate(
    result: CapabilityResult,
    settings: GateSettings,
    *,
    m: int,
    conditions: Mapping[str, Any],
) -> CapabilityResult:
    """The result with its gate, or a warning saying why it is not gated (the baseline has
    no entry for it, or the entry shares no example id with it).

    A significant drop beyond ``max_drop_pts`` fails the item; with ``gate_only`` only such
    a drop fails it, and the threshold verdict is reported alone.
    """
    if settings.baseline is None or result.n == 0:
        return result
    entry = entry_of(settings, result.file, result.test, result.model)
    if entry is None:
        return _not_gated(result, NO_ENTRY, settings)
    current = {o.id: o.correct for o in result.outcomes}
    if not any(example in entry.outcomes for example in current):
        return _not_gated(result, _unpaired(entry, len(current)), settings)
    measured = gate(
        current,
        result.pass_rate or 0.0,
        entry,
        m=max(m, 1),
        alpha=settings.alpha,
        max_drop_pts=settings.max_drop_pts,
        content_hash=result.content_hash,
        conditions=conditions,
        clusters={o.id: o.cluster for o in result.outcomes if o.cluster},
        use_clusters=settings.use_clusters,
        current_scores={o.id: o.scores for o in result.outcomes},
    )
    return settled(dataclasses.replace(result, gate=measured), gate_only=settings.gate_only)
