"""Hand-made result rows and gate blocks for tests of what reads results (loggers, the
watcher)."""

from __future__ import annotations

from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison


def result_row(
    test: str, capability: str, status: str, n: int, passed: int, **kw
) -> CapabilityResult:
    rate = passed / n if n else None
    return CapabilityResult(
        file="checks.yaml",
        test=test,
        capability=capability,
        task="caption",
        model="m",
        n=n,
        passed=passed,
        pass_rate=rate,
        ci_low=None,
        ci_high=None,
        threshold=0.5,
        chance=0.5,
        status=status,  # type: ignore[arg-type]
        **kw,
    )


def gate_row(regressed: bool) -> GateComparison:
    return GateComparison(
        delta_pts=-10.0,
        baseline_rate=0.9,
        current_rate=0.8,
        n_matched=10,
        b=3,
        c=0,
        p_mid=0.01,
        p_corrected=0.02,
        alpha_corrected=0.025,
        regressed=regressed,
        improved=False,
        added=0,
        removed=0,
        min_detectable_drop_pts=None,
        baseline_model="m",
    )
