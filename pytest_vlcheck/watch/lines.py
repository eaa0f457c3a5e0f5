"""The one line ``vlcheck watch`` prints per checkpoint, and the outcome it states.

The line starts with the checkpoint's file name, then its outcome: ``passed``, ``regressed``
or, with nothing to gate against yet, ``passed (no reference)``; then the reference, the
capabilities that dropped (points, McNemar p), and what did not change the outcome: tests
below their threshold and tests that errored, counted.
"""

from __future__ import annotations

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.wording import pvalue
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison
from pytest_vlcheck.run.outcome import Run


def outcome_of(run: Run, gated: bool) -> str:
    """``regressed`` when the gate found a drop, else ``passed`` (``no reference`` when there
    was nothing to gate against)."""
    if not gated:
        return "no reference"
    return "regressed" if run.regressions else "passed"


def _drop(result: CapabilityResult) -> str:
    assert isinstance(result.gate, GateComparison)
    g = result.gate
    return f"{result.capability} ({result.test}) {fmt.points(g.delta_pts)} pts, p {pvalue(g.p_mid)}"


def _below_threshold(result: CapabilityResult) -> bool:
    """A threshold miss: failed, and not by the gate."""
    regressed = isinstance(result.gate, GateComparison) and result.gate.regressed
    return result.status == "failed" and not regressed


def checkpoint_line(name: str, run: Run, outcome: str, reference: str | None) -> str:
    """``epoch_3.safetensors regressed against epoch_2.safetensors: attribute/color (color)
    -41.7 pts, p 0.00098; 1 test below its threshold``."""
    word = "passed (no reference)" if outcome == "no reference" else outcome
    line = f"{name} {word}"
    if reference is not None:
        line += f" against {reference}"
    if run.regressions:
        line += ": " + ", ".join(_drop(r) for r in run.regressions)
    misses = sum(_below_threshold(r) for r in run.results)
    errored = sum(r.status == "error" for r in run.results) + len(run.errors)
    if misses:
        line += (
            f"; {fmt.plural(misses, 'test')} below {'its' if misses == 1 else 'their'} threshold"
        )
    if errored:
        line += f"; {errored} errored"
    return line
