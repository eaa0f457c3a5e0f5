"""The engine: plans the unique inputs a set of tests needs, scores them once in batches, and
lets each test's task kind turn the scores into verdicts."""

from pytest_vlcheck.engine.evaluate import MissingImagesError, evaluate_test, unscored_result
from pytest_vlcheck.engine.scoring import ModelRunner, ScoringStats, Unscorable

__all__ = [
    "MissingImagesError",
    "ModelRunner",
    "ScoringStats",
    "Unscorable",
    "evaluate_test",
    "unscored_result",
]
