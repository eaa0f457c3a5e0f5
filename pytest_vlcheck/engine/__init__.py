"""The engine: plans the unique inputs a set of tests needs, scores them once in batches, and
turns the scores into verdicts through the pure functions of ``metrics``."""

from pytest_vlcheck.engine.evaluate import MissingImagesError, evaluate_test, unscored_result
from pytest_vlcheck.engine.scoring import ModelRunner, ScoringStats

__all__ = ["MissingImagesError", "ModelRunner", "ScoringStats", "evaluate_test", "unscored_result"]
