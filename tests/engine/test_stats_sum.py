"""One rule sums scoring stats per model, for xdist's workers and torch.distributed's ranks."""

from __future__ import annotations

from pytest_vlcheck.engine.runner.stats import ScoringStats, summed_per_model


def test_stats_are_summed_per_model_field_by_field() -> None:
    first = {"a": ScoringStats(images_encoded=3, model_seconds=0.5)}
    second = {
        "a": ScoringStats(images_encoded=4, texts_cached=2),
        "b": ScoringStats(pairs_scored=1),
    }
    total = summed_per_model([first, second])
    assert list(total) == ["a", "b"]  # first seen first
    assert total["a"] == ScoringStats(images_encoded=7, texts_cached=2, model_seconds=0.5)
    assert total["b"] == ScoringStats(pairs_scored=1)
    assert summed_per_model([]) == {}
