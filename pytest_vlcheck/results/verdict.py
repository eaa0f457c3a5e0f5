"""The verdict: the one place a result's final status and message are settled.

A measurement's status starts as its threshold's (the engine), then its blocks decide: a
prior's hard threshold missed fails it, a baseline gate's significant drop fails it, and
``--vl-gate-only`` leaves the gate alone to fail it. pytest (or ``evaluate``, which copies
pytest) then adds what it knows: a known failure turns a fail into ``xfailed`` and a pass
into ``xpassed``; an item that never measured takes pytest's outcome and the first line of
its error. ``Run.passed`` and the items ask ``passes``. Pure: no pytest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_vlcheck.results.blocks import GateComparison, PriorBlock
from pytest_vlcheck.results.capability import MEASURED, CapabilityResult, Status

if TYPE_CHECKING:
    from pytest_vlcheck.checklist.schema import ChecklistTest

__all__ = ["PASSING", "error_line", "final", "passes", "settled", "unmeasured"]

PASSING: tuple[Status, ...] = ("passed", "skipped", "xfailed")
"""The statuses a run passes with, as pytest counts them: a known failure that failed is
expected (xfail), one that passed is not (strict XPASS)."""


def passes(status: Status) -> bool:
    """Whether a result with this status lets the run pass."""
    return status in PASSING


def error_line(error: BaseException | None) -> str:
    """What a row says of the error that kept it from a measurement: the message's first
    line, or the exception's type when it has no message."""
    if error is None:
        return ""
    return (str(error) or type(error).__name__).splitlines()[0]


def settled(result: CapabilityResult, *, gate_only: bool = False) -> CapabilityResult:
    """A measured result with the status its blocks give it.

    Its own status is read as the threshold's verdict (idempotent: settling twice changes
    nothing). A missed hard threshold of the prior fails it; with ``gate_only`` a threshold
    miss (hard or not) does not, once a gate block is attached (a comparison or a warning
    saying why there is none); a significant drop beyond the allowed one always does.
    """
    if result.status not in ("passed", "failed"):
        return result
    ok = result.status == "passed"
    if isinstance(result.prior, PriorBlock) and result.prior.hard_threshold_met is False:
        ok = False
    if gate_only and result.gate is not None:
        ok = True
    if isinstance(result.gate, GateComparison) and result.gate.regressed:
        ok = False
    status: Status = "passed" if ok else "failed"
    return result if status == result.status else replace(result, status=status)


def final(
    result: CapabilityResult,
    *,
    known_failure: str = "",
    outcome: Status | None = None,
    error: BaseException | None = None,
) -> CapabilityResult:
    """The row a run reports for one item: its measurement under a known failure (``xfailed``
    or ``xpassed``), or under pytest's ``outcome`` with the first line of ``error`` as the
    reason when it has none of its own (an errored or skipped item's empty result)."""
    if known_failure and result.status in MEASURED:
        status = {"failed": "xfailed", "passed": "xpassed"}.get(result.status, result.status)
        return replace(result, status=status, known_failure=known_failure)  # type: ignore[arg-type]
    if outcome is None:
        return result
    return replace(result, status=outcome, message=result.message or error_line(error))


def unmeasured(
    test: ChecklistTest,
    model: str,
    status: Status,
    threshold: float | None = None,
    file: str | None = None,
) -> CapabilityResult:
    """The matrix row of a test that produced no measurement (errored, skipped, a Python test
    that made no ``evaluate`` call), under ``file`` as the report names it (else the test's):
    no pass rate and no interval (None, ``null`` in matrix.json), not a 0 a plot would draw."""
    return CapabilityResult(
        file=str(test.file) if file is None else file,
        test=test.id,
        capability=test.capability,
        task=test.task,
        model=model,
        n=0,
        passed=0,
        pass_rate=None,
        ci_low=None,
        ci_high=None,
        threshold=test.threshold if threshold is None else threshold,
        chance=0.0,
        status=status,
        line=test.line,
        criterion=test.criterion,
    )
