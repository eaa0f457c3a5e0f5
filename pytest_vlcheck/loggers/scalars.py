"""The names a run's numbers are logged under: stable, documented, valid everywhere.

``vlcheck/<capability>/<test>/pass_rate`` per measured test, and ``vlcheck/summary/...``
over the model's tests. Names keep to what MLflow accepts (letters, digits, ``_ - . space
/``; no leading, trailing or double ``/``), the strictest of the loggers; other characters
become ``_``. Two tests whose names meet after that (the same capability and test id in two
checklist files) are an error naming both: a curve must never mix two tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.results import MEASURED, CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison

PREFIX = "vlcheck"
SUMMARY = f"{PREFIX}/summary"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_\-. /]")
_SLASHES = re.compile(r"/{2,}")


class ScalarNameError(VlcheckUserError, ValueError):
    """Two results would be logged under one name."""


def sanitised(name: str) -> str:
    """``name`` with what MLflow refuses replaced: other characters by ``_``, runs of ``/``
    by one, and no ``/`` at either end."""
    return _SLASHES.sub("/", _NOT_ALLOWED.sub("_", name)).strip("/")


def _measured(result: CapabilityResult) -> bool:
    return result.status in MEASURED and result.n > 0 and result.pass_rate is not None


def model_scalars(results: Sequence[CapabilityResult]) -> dict[str, float]:
    """One model's results as scalars; errored, skipped and unmeasured tests have no pass
    rate (a scalar is a number, and a missing point is not a zero), errored ones are counted
    in the summary."""
    measured = [r for r in results if _measured(r)]
    scalars: dict[str, float] = {}
    owners: dict[str, str] = {}
    for result in measured:
        name = sanitised(f"{PREFIX}/{result.capability}/{result.test}/pass_rate")
        owner = f"{result.file}::{result.test}"
        if name in owners:
            raise ScalarNameError(
                f"scalar {name!r} would be logged for both {owners[name]} and {owner}; expected "
                "test ids that differ within a capability across the checklists of one run"
            )
        owners[name] = owner
        scalars[name] = float(result.pass_rate)  # type: ignore[arg-type]
    errored = sum(r.status == "error" for r in results)
    return scalars | _summary(measured, errored)


def _summary(measured: Sequence[CapabilityResult], errored: int) -> dict[str, float]:
    """Counts over the measured tests, and how many errored: a run whose every test errored
    (a wrong tokenizer, say) still logs a point that says so. The mean needs a measurement."""
    if not measured and not errored:
        return {}
    passed = sum(r.status in ("passed", "xpassed") for r in measured)
    regressions = sum(isinstance(r.gate, GateComparison) and r.gate.regressed for r in measured)
    summary = {
        f"{SUMMARY}/tests": float(len(measured)),
        f"{SUMMARY}/tests_passed": float(passed),
        f"{SUMMARY}/tests_failed": float(len(measured) - passed),
        f"{SUMMARY}/tests_errored": float(errored),
        f"{SUMMARY}/gate_regressions": float(regressions),
    }
    if measured:
        summary[f"{SUMMARY}/mean_pass_rate"] = sum(r.pass_rate for r in measured) / len(measured)  # type: ignore[misc]
    return summary


def prefixed(prefix: str, scalars: Mapping[str, float]) -> dict[str, float]:
    """One model's scalars under its name (runs with several models, checkpoint globs):
    ``vlcheck/...`` becomes ``<prefix>/vlcheck/...``."""
    head = sanitised(prefix)
    return {f"{head}/{name}" if head else name: value for name, value in scalars.items()}
