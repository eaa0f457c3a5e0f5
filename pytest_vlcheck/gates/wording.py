"""What the gate says: its part of a verdict line, the lines under a verdict, and the
terminal's warning when a baseline gates nothing for some items. Reports render these."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import GateSettings
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning

__all__ = ["gate_details", "pvalue", "unmatched_warning", "verdict_suffix"]


def pvalue(p: float) -> str:
    """A p-value with two significant digits: ``0.018``, ``0.0003``, ``1.2e-07``, ``1``."""
    return f"{p:.2g}"


def _pts(delta: float) -> str:
    """Signed points with one decimal, rounded half-up like every other report number."""
    text = fmt.pct(delta / 100)[:-1]
    return text if text.startswith("-") or text == "0.0" else "+" + text


def verdict_suffix(g: GateComparison) -> str:
    """The gate's part of the verdict line:
    ``(-12.5 pts vs baseline 53.7%, McNemar mid-p 0.0003, corrected 0.018)``."""
    return (
        f"({_pts(g.delta_pts)} pts vs baseline {fmt.pct(g.baseline_rate)}, "
        f"McNemar mid-p {pvalue(g.p_mid)}, corrected {pvalue(g.p_corrected)})"
    )


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


def unmatched_warning(
    results: Iterable[CapabilityResult], settings: GateSettings, rootdir: Path
) -> str | None:
    """What the terminal says when ``--vl-baseline`` has no entry for some measured items: a
    gate that finds no entry checks nothing, which must not pass a CI job silently. Entries
    are keyed by paths relative to the rootdir, so the likely causes are named."""
    if settings.baseline is None:
        return None
    measured = [r for r in results if r.n > 0 and r.status != "error"]
    missing = [r for r in measured if isinstance(r.gate, GateWarning)]
    if not missing:
        return None
    examples = ", ".join(f"{r.file}::{r.test} [{r.model}]" for r in missing[:3])
    files = sorted({e.file for e in settings.baseline.entries} - {r.file for r in measured})
    hint = (
        f"; it has entries for {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}, and "
        f"entry paths are relative to the rootdir ({rootdir}): run from the folder the "
        "baseline was saved in, or set the same rootdir"
        if files
        else ""
    )
    return (
        f"vlcheck: WARNING: no gate for {len(missing)} of {len(measured)} items: the baseline "
        f"has no entry for {examples}{' ...' if len(missing) > 3 else ''}{hint}"
    )
