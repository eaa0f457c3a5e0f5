"""The text of a verdict: the one-line summary and the failure report under it."""

from __future__ import annotations

from pytest_vlcheck.fmt import ci, pct, value
from pytest_vlcheck.gates.wording import gate_details, not_gated_suffix, verdict_suffix
from pytest_vlcheck.report.prior_view import prior_verdict_lines
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning, PriorBlock
from pytest_vlcheck.tasks import TASKS

SHOWN_FAILURES = 3


def verdict_line(result: CapabilityResult) -> str:
    """A complete verdict in one line, e.g.
    ``attribute/color: 61.3% (245/400, 95% CI 56.4-65.9) < 75.0% [clip]``; when a macro
    average is what the threshold judges, it leads and the micro figures follow."""
    judged = result.judged
    value_judged = result.judged_value
    relation = ">=" if result.threshold_met else "<"
    micro = (
        f"{pct(result.pass_rate)} ({result.passed}/{result.n}, "
        f"95% CI {ci(result.ci_low, result.ci_high)})"
    )
    if judged != "pass_rate":
        shown = "n/a" if value_judged is None else pct(value_judged)
        line = (
            f"{result.capability}: {judged} {shown} {relation} {pct(result.threshold)} "
            f"(micro {micro}) [{result.model}]"
        )
    else:
        line = f"{result.capability}: {micro} {relation} {pct(result.threshold)} [{result.model}]"
    if isinstance(result.gate, GateComparison):
        line = line.replace(
            f" [{result.model}]", f" {verdict_suffix(result.gate)} [{result.model}]"
        )
        if result.gate.regressed:
            line = "REGRESSED " + line
    elif isinstance(result.gate, GateWarning):
        suffix = not_gated_suffix(result.gate)
        line = line.replace(f" [{result.model}]", f" {suffix} [{result.model}]")
    prior = result.prior
    if isinstance(prior, PriorBlock) and prior.hard_threshold_met is False:
        line += (
            f"; hard-test accuracy {pct(prior.hard_accuracy)} < "
            f"{pct(prior.hard_threshold)} (hard_threshold)"
        )
    unscored = sum(result.unscored.values())
    if unscored:
        reasons = ", ".join(f"{count} {reason}" for reason, count in result.unscored.items())
        line += f"; {unscored} example(s) unscored ({reasons})"
    return line


def verdict_details(result: CapabilityResult) -> list[str]:
    """Lines under the verdict: chance, task metrics, and a few failing examples."""
    task = result.task
    criterion = f", criterion {result.criterion}" if result.criterion else ""
    chance = "no chance level" if result.chance is None else f"chance {pct(result.chance)}"
    lines = [f"task {task}{criterion}; {chance}; test {result.file}::{result.test}"]
    if result.metrics:
        lines.append(
            "metrics: "
            + ", ".join(f"{name} {value(number)}" for name, number in result.metrics.items())
        )
    if task in TASKS:
        lines.extend(TASKS[task].verdict_notes(result.score_kind))
    lines.extend(prior_verdict_lines(result.prior))
    if result.ties:
        lines.append(
            f"{result.ties} example(s) decided by an exact tie (the test's ties: rule; "
            "by default a tie is wrong)"
        )
    if isinstance(result.gate, GateComparison):
        lines.append(f"gate against baseline model {result.gate.baseline_model}:")
        lines.extend(f"  {text}" for text in gate_details(result.gate))
    failures = result.failures
    if failures:
        lines.append(f"failing examples (first {min(len(failures), SHOWN_FAILURES)}):")
        lines.extend(f"  [{f.id}] {f.detail}" for f in failures[:SHOWN_FAILURES])
    return lines
