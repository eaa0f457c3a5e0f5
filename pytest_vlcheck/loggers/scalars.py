"""The names a run's numbers are logged under: stable, documented, valid everywhere.

``vlcheck/<capability>/<test>/pass_rate`` per measured test, and ``vlcheck/summary/...``
over the model's tests. Names keep to what MLflow accepts (letters, digits, ``_ - . space
/``; no leading, trailing or double ``/``, no ``.`` or ``..`` segment, at most 250
characters), the strictest of the loggers: other characters become ``_``, a ``.`` or ``..``
segment ``_`` or ``__``, and a longer name keeps its first 241 characters and ends in ``-``
and 8 hex digits of its SHA-256 (stable across runs and machines). Two tests whose names meet
after that (the same capability and test id in two checklist files), or two models whose
prefixes do, are an error naming both: a curve must never mix two tests or two models.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.results import MEASURED, CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison

PREFIX = "vlcheck"
SUMMARY = f"{PREFIX}/summary"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_\-. /]")
_SLASHES = re.compile(r"/{2,}")
_DOT_SEGMENT = re.compile(r"(?<![^/])\.{1,2}(?![^/])")
MAX_NAME = 250
"""MLflow's longest metric name."""
_HASH_DIGITS = 8


class ScalarNameError(VlcheckUserError, ValueError):
    """Two results would be logged under one name."""


def sanitised(name: str) -> str:
    """``name`` with what MLflow refuses replaced: other characters by ``_``, runs of ``/``
    by one, no ``/`` at either end, a ``.`` or ``..`` segment by as many ``_``; shortened to
    ``MAX_NAME`` characters with a hash of the whole name when longer."""
    clean = _SLASHES.sub("/", _NOT_ALLOWED.sub("_", name)).strip("/")
    clean = _DOT_SEGMENT.sub(lambda dots: "_" * len(dots.group()), clean)
    if len(clean) <= MAX_NAME:
        return clean
    digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    return f"{clean[: MAX_NAME - _HASH_DIGITS - 1].rstrip('/')}-{digest}"


def check_prefixes(models: Iterable[str]) -> None:
    """Refuse two model names (or checkpoint glob names) that one prefix would log under."""
    owners: dict[str, str] = {}
    for model in models:
        head = sanitised(model)
        if owners.get(head, model) != model:
            raise ScalarNameError(
                f"models {owners[head]!r} and {model!r} would both be logged under the prefix "
                f"{head!r}; expected model names that differ in letters, digits or '_-. ' "
                "(name them apart with NAME=SPEC)"
            )
        owners[head] = model


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
    return {sanitised(f"{head}/{name}"): value for name, value in scalars.items()}
