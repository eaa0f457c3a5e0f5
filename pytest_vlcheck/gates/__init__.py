"""Comparisons between runs: baselines (format, merge, prune), the gate decision and its
counting, and the deltas of several models against the run's first."""

from pytest_vlcheck.gates.baseline import Baseline
from pytest_vlcheck.gates.gating import GateSettings

__all__ = ["Baseline", "GateSettings"]
