"""What the gate says: its part of a verdict line, the lines under a verdict, and the
terminal's warnings when a baseline gates nothing for some items. Reports render these."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import FLIPPED_SHOWN, GateSettings, entry_of
from pytest_vlcheck.metrics.clustered import CLUSTERED, EXACT, FEW_CLUSTERS, MIN_CLUSTERS
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning

__all__ = [
    "gate_details",
    "gate_lines",
    "gate_verdict",
    "not_gated_suffix",
    "not_gated_warnings",
    "power_note",
    "pvalue",
    "verdict_suffix",
]


def pvalue(p: float) -> str:
    """A p-value with two significant digits: ``0.018``, ``0.0003``, ``1.2e-07``, ``1``."""
    return f"{p:.2g}"


TEST_NAMES = {
    EXACT: "McNemar mid-p",
    CLUSTERED: "clustered mid-p",
    "clustered_mcnemar": "clustered McNemar p",  # Durkalski's, in files written before
}
CLUSTER_ADVICE = (
    "give the examples more images, group them with a `cluster:` tag, or gate them as "
    "independent with --vl-gate-clusters=off"
)


def few_clusters_reason(g: GateComparison) -> str:
    """Why the clustered test cannot decide: too few clusters, or every change in one."""
    if g.clusters < MIN_CLUSTERS:
        return (
            f"the {g.n_matched} paired examples form {g.clusters} cluster"
            f"{'' if g.clusters == 1 else 's'} (images, or values of the `cluster:` tag), fewer "
            f"than the {MIN_CLUSTERS} the clustered test needs"
        )
    return f"the {g.b + g.c} lost and gained examples all sit in one of the {g.clusters} clusters"


def _few_clusters_verdict(g: GateComparison, drop: str) -> str:
    """A change the clustered test cannot judge, said as such (never "not significant")."""
    change = f"dropped {drop}" if g.delta_pts < 0 else f"{fmt.points(g.delta_pts)} pts"
    return (
        f"{change}, not tested for significance: {few_clusters_reason(g)}, so a change cannot "
        f"be told from noise ({g.b} lost, {g.c} gained); {CLUSTER_ADVICE}"
    )


def gate_verdict(g: GateComparison) -> str:
    """The gate's verdict in words: ``regressed``, ``dropped N pts, not significant``,
    ``dropped N pts, less than --vl-max-drop``, ``improved``, ``unchanged``, or not tested
    for too few clusters, with the test that decided it (the exact McNemar mid-p, or the
    clustered mid-p when examples share clusters, against alpha / m, m the items gated) and
    the paired examples lost and gained, which are what significance depends on."""
    drop = f"{fmt.points(-g.delta_pts, signed=False)} pts"
    if g.test == FEW_CLUSTERS:
        return _few_clusters_verdict(g, drop)
    significant = g.p_mid < g.alpha_corrected
    test = (
        f"{TEST_NAMES.get(g.test, g.test)} {pvalue(g.p_mid)} {'<' if significant else '>='} "
        f"alpha/m {pvalue(g.alpha_corrected)}; {g.b} lost, {g.c} gained"
    )
    if g.test == CLUSTERED:
        test += f" in {g.clusters} clusters, design effect {g.design_effect:.2f}"
    if g.regressed:
        return f"regressed: dropped {drop}, significant ({test})"
    if g.improved:
        return f"improved: {fmt.points(g.delta_pts)} pts, significant ({test})"
    if g.delta_pts < 0 and not significant:
        return f"dropped {drop}, not significant ({test})"
    if g.delta_pts < 0:
        return f"dropped {drop}, less than --vl-max-drop ({test})"
    change = "no significant change" if not significant else "within --vl-max-drop"
    return f"unchanged: {fmt.points(g.delta_pts)} pts, {change} ({test})"


def verdict_suffix(g: GateComparison) -> str:
    """The gate's part of the verdict line: ``(gate: dropped 14.0 pts, not significant
    (McNemar mid-p 0.0048 >= alpha/m 0.0031; 9 lost, 2 gained) vs baseline 53.7%)``. When
    only some examples pair with the baseline's, it says how many: the points compare the
    two whole pass rates, the test only the paired examples."""
    paired = ""
    if g.added or g.removed:
        paired = f", {g.n_matched} of {g.n_matched + g.added} examples paired"
    return f"(gate: {gate_verdict(g)} vs baseline {fmt.pct(g.baseline_rate)}{paired})"


def not_gated_suffix(g: GateWarning) -> str:
    """The verdict line's part for an item the baseline could not gate."""
    return f"(not gated: {g.warning})"


def gate_details(g: GateComparison) -> list[str]:
    """Further lines for a verdict: paired examples, added/removed ones, what a drop needs
    to be significant, and the warnings."""
    lines = [f"{g.n_matched} examples paired: {g.b} lost, {g.c} gained since the baseline"]
    if g.added or g.removed:
        lines.append(f"{g.added} examples added, {g.removed} removed since the baseline")
    lines.append(power_note(g))
    lines += [
        f"{what}: {_first_ids(ids)}"
        for what, ids in (("lost", g.lost), ("gained", g.gained))
        if ids
    ]
    lines += [f"warning: {w}" for w in g.warnings]
    return lines


def _first_ids(ids: tuple[str, ...]) -> str:
    """The first ``FLIPPED_SHOWN`` example ids, and how many more."""
    more = f" (+{len(ids) - FLIPPED_SHOWN} more)" if len(ids) > FLIPPED_SHOWN else ""
    return ", ".join(ids[:FLIPPED_SHOWN]) + more


def power_note(g: GateComparison) -> str:
    """What it takes to be significant here, true to McNemar: significance depends on the
    lost and gained examples together, not on their difference; for the clustered test, at
    the design effect measured here."""
    if g.test == FEW_CLUSTERS:
        return (
            f"no number of lost examples can be significant here: {few_clusters_reason(g)}; "
            f"{CLUSTER_ADVICE}"
        )
    if g.min_detectable_drop_pts is None:
        return (
            f"too few examples to gate at this m: even all {g.n_matched} paired examples lost "
            f"would not be significant at alpha/m {pvalue(g.alpha_corrected)}; add examples, "
            "gate fewer items, or raise --vl-alpha"
        )
    lost = round(g.min_detectable_drop_pts * g.n_matched / 100)
    at_deff = ""
    if g.test == CLUSTERED:
        at_deff = (
            f" by the clustered test at the design effect measured here ({g.design_effect:.2f})"
        )
    return (
        f"with no example gained, {lost} lost examples ({lost}/{g.n_matched} = "
        f"{fmt.pct(g.min_detectable_drop_pts / 100)[:-1]} pts) would be significant at this "
        f"m{at_deff}; each gained example raises that number"
    )


def not_gated_warnings(
    results: Iterable[CapabilityResult], settings: GateSettings, rootdir: Path
) -> list[str]:
    """What the terminal says when ``--vl-baseline`` gates some measured items not at all: a
    gate that checks nothing must not pass a CI job silently. One line counts the items
    without an entry (keyed by paths relative to the rootdir, so the likely causes are
    named), one the items whose entry shares no example id with them."""
    if settings.baseline is None:
        return []
    measured = [r for r in results if r.n > 0 and r.status != "error"]
    missing: list[CapabilityResult] = []
    unpaired: list[CapabilityResult] = []
    for r in measured:
        if isinstance(r.gate, GateWarning):
            has_entry = entry_of(settings, r.file, r.test, r.model) is not None
            (unpaired if has_entry else missing).append(r)
    lines = []
    if missing:
        files = sorted({e.file for e in settings.baseline.entries} - {r.file for r in measured})
        hint = (
            f"; it has entries for {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}, "
            f"and entry paths are relative to the rootdir ({rootdir}): run from the folder the "
            "baseline was saved in, or set the same rootdir"
            if files
            else ""
        )
        lines.append(
            f"vlcheck: WARNING: no gate for {len(missing)} of {len(measured)} items: the "
            f"baseline has no entry for {_named(missing)}{hint}"
        )
    if unpaired:
        lines.append(
            f"vlcheck: WARNING: not gated: {len(unpaired)} of {len(measured)} items share no "
            f"example id with their baseline entry: {_named(unpaired)}; the example ids "
            "changed since the baseline was saved: save a new baseline"
        )
    return lines


def _named(results: list[CapabilityResult]) -> str:
    """The first three items, ``file::test [model]``, and ``...`` for the rest."""
    named = ", ".join(f"{r.file}::{r.test} [{r.model}]" for r in results[:3])
    return named + (" ..." if len(results) > 3 else "")


def gate_lines(results: Iterable[CapabilityResult]) -> list[str]:
    """One line per item a baseline was given for: its gate verdict in words, or why it was
    not gated (pytest prints nothing for a passing item, so this is where a user reads it)."""
    lines = []
    for r in results:
        where = f"{r.file}::{r.test} [{r.model}]"
        if isinstance(r.gate, GateComparison):
            lines.append(f"{where}: {gate_verdict(r.gate)}")
        elif isinstance(r.gate, GateWarning):
            lines.append(f"{where}: not gated: {r.gate.warning}")
    return lines
