"""Comparisons between runs: baselines (format, load, save, merge, prune), the gate
decision, the count of items gated (m), the gate's wording, and the deltas of several models
against the run's first."""

from pytest_vlcheck.gates.baseline import Baseline
from pytest_vlcheck.gates.decision import GateSettings

__all__ = ["Baseline", "GateSettings"]
