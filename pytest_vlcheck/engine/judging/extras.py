"""The numbers of a result that need the test's structure beside its outcomes: the clustered
interval (which examples share an image), ``all_of`` group rates per slice, and the share of
examples a word-order-blind model can only tie (``metrics.clustered``, ``metrics.aggregates``,
``metrics.word_order`` compute them; this module only gathers their inputs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.metrics.aggregates import all_of_slices
from pytest_vlcheck.metrics.clustered import clustered_interval
from pytest_vlcheck.metrics.word_order import reordered_share
from pytest_vlcheck.tasks import Example, Task


def cluster_keys(test: ChecklistTest, task: Task, examples: Sequence[Example]) -> list[str]:
    """Each example's cluster: the value of the test's ``cluster:`` tag, else the task kind's
    (the image of a caption test ...); an example with neither is a cluster of its own."""
    keys = []
    for example in examples:
        if test.cluster:
            value = example.tags.get(test.cluster)
            key = None if value is None else "tag:" + value
        else:
            key = task.cluster_key(example)
        keys.append(key if key is not None else "example:" + example.id)
    return keys


def result_extras(
    test: ChecklistTest,
    task: Task,
    scored: Sequence[Example],
    unscored: Sequence[Example],
    correct: np.ndarray,
    clusters: Sequence[str],
) -> dict[str, Any]:
    """``CapabilityResult`` fields: ``ci_low_clustered``, ``ci_high_clustered``,
    ``clusters``, ``design_effect``, ``all_of_slices`` and ``reordered_share``."""
    interval = clustered_interval([bool(ok) for ok in correct], clusters)
    tags = [example.tags for example in scored]
    slices = {}
    for tag in test.all_of:
        lost = {e.tags[tag] for e in unscored if tag in e.tags}
        groups = [example.tags.get(tag) for example in scored]
        slices[tag] = all_of_slices(correct, groups, tags, lost, skip=test.all_of)
    return {
        "ci_low_clustered": interval.low,
        "ci_high_clustered": interval.high,
        "clusters": interval.clusters,
        "design_effect": interval.design_effect,
        "all_of_slices": slices,
        "reordered_share": reordered_share([task.text_choices(e) for e in scored]),
    }
