"""``results.verdict``: the one rule that settles a result's final status and message."""

from __future__ import annotations

from dataclasses import replace

from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning, PriorBlock
from pytest_vlcheck.results.verdict import error_line, final, passes, settled


def measured(status: str = "passed") -> CapabilityResult:
    return CapabilityResult(
        "a.yaml",
        "t",
        "object/x",
        "caption",
        "m",
        10,
        8,
        0.8,
        0.5,
        0.9,
        0.7,
        0.5,
        status,  # type: ignore[arg-type]
    )


def comparison(regressed: bool) -> GateComparison:
    return GateComparison(
        -20.0 if regressed else 0.0,
        0.8,
        0.6,
        10,
        2,
        0,
        0.01,
        0.01,
        0.05,
        regressed,
        False,
        0,
        0,
        None,
    )


def prior(met: bool | None) -> PriorBlock:
    return PriorBlock(("p",), 10, 0.8, 0.5, 4, 2, 0.5, 0.2, 0.8, 0.3, 0.75, met)


def test_a_missed_hard_threshold_fails_a_passing_measurement() -> None:
    assert settled(replace(measured(), prior=prior(False))).status == "failed"
    assert settled(replace(measured(), prior=prior(True))).status == "passed"


def test_the_gate_fails_a_regression_and_gate_only_ignores_the_threshold() -> None:
    regressed = replace(measured(), gate=comparison(True))
    assert settled(regressed, gate_only=True).status == "failed"
    missed = replace(measured("failed"), prior=prior(False), gate=comparison(False))
    assert settled(missed).status == "failed"
    assert settled(missed, gate_only=True).status == "passed"
    not_gated = replace(measured("failed"), gate=GateWarning("no baseline entry"))
    assert settled(not_gated, gate_only=True).status == "passed"
    assert settled(measured("failed"), gate_only=True).status == "failed"  # no gate block


def test_settling_twice_changes_nothing() -> None:
    for result in (
        replace(measured(), prior=prior(False)),
        replace(measured("failed"), gate=comparison(False)),
    ):
        for gate_only in (False, True):
            once = settled(result, gate_only=gate_only)
            assert settled(once, gate_only=gate_only) == once


def test_a_known_failure_turns_a_fail_into_xfailed_and_a_pass_into_xpassed() -> None:
    failed = final(measured("failed"), known_failure="why", outcome="failed")
    assert (failed.status, failed.known_failure) == ("xfailed", "why")
    assert final(measured(), known_failure="why").status == "xpassed"
    assert not passes(final(measured(), known_failure="why").status)
    assert passes(failed.status)


def test_an_unmeasured_item_takes_the_outcome_and_the_first_line_of_its_error() -> None:
    empty = replace(measured(), n=0, passed=0, status="error")
    row = final(empty, outcome="error", error=ValueError("first\nsecond"))
    assert (row.status, row.message) == ("error", "first")
    assert final(empty, outcome="error", error=KeyboardInterrupt()).message == "KeyboardInterrupt"
    kept = final(replace(empty, message="own reason"), outcome="skipped", error=ValueError("x"))
    assert kept.message == "own reason"
    assert error_line(None) == ""
