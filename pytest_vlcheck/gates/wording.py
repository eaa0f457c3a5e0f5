"""What the gate says: its part of a verdict line, the lines under a verdict, and the
terminal's warnings when a baseline gates nothing for some items. Reports render these."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import GateSettings, entry_of
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning

__all__ = ["gate_details", "not_gated_suffix", "not_gated_warnings", "pvalue", "verdict_suffix"]


def pvalue(p: float) -> str:
    """A p-value with two significant digits: ``0.018``, ``0.0003``, ``1.2e-07``, ``1``."""
    return f"{p:.2g}"


def _pts(delta: float) -> str:
    """Signed points with one decimal, rounded half-up like every other report number."""
    text = fmt.pct(delta / 100)[:-1]
    return text if text.startswith("-") or text == "0.0" else "+" + text


def verdict_suffix(g: GateComparison) -> str:
    """The gate's part of the verdict line:
    ``(-12.5 pts vs baseline 53.7%, McNemar mid-p 0.0003, corrected 0.018)``. When only some
    examples pair with the baseline's, it says how many: the points compare the two whole
    pass rates, the test only the paired examples."""
    paired = ""
    if g.added or g.removed:
        paired = f"{g.n_matched} of {g.n_matched + g.added} examples paired, "
    return (
        f"({_pts(g.delta_pts)} pts vs baseline {fmt.pct(g.baseline_rate)}, {paired}"
        f"McNemar mid-p {pvalue(g.p_mid)}, corrected {pvalue(g.p_corrected)})"
    )


def not_gated_suffix(g: GateWarning) -> str:
    """The verdict line's part for an item the baseline could not gate."""
    return f"(not gated: {g.warning})"


def gate_details(g: GateComparison) -> list[str]:
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
    missing, unpaired = [], []
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
