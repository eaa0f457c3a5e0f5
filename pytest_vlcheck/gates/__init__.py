"""Comparisons between runs: baselines (format, merge, prune), the gate decision and its
counting, and the deltas of several models against the run's first."""
