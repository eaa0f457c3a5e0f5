"""The engine: plans the unique inputs a set of tests needs, scores them once in batches, and
lets each test's task kind turn the scores into verdicts.

The names below are imported on first use (``pytest_vlcheck.lazy``): a light module of the
engine, such as ``progress``, does not load numpy and the task kinds with it."""

from typing import TYPE_CHECKING

from pytest_vlcheck.lazy import lazy_exports

if TYPE_CHECKING:  # the names as mypy sees them (``_EXPORTS`` resolves them at run time)
    from pytest_vlcheck.engine.judging.judge import judge_test as judge_test
    from pytest_vlcheck.engine.judging.missing import MissingImagesError as MissingImagesError
    from pytest_vlcheck.engine.runner.model_runner import ModelRunner as ModelRunner
    from pytest_vlcheck.engine.runner.model_runner import Unscorable as Unscorable
    from pytest_vlcheck.engine.runner.stats import ScoringStats as ScoringStats

_JUDGE = "pytest_vlcheck.engine.judging.judge"
_SCORING = "pytest_vlcheck.engine.runner.model_runner"
_EXPORTS = {
    "MissingImagesError": "pytest_vlcheck.engine.judging.missing",
    "ModelRunner": _SCORING,
    "ScoringStats": "pytest_vlcheck.engine.runner.stats",
    "Unscorable": _SCORING,
    "judge_test": _JUDGE,
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
