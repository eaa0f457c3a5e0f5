"""Per test, what a linguistic prior says about the model's wins (seed 001).

The unit is one choice between texts as the test's task kind defines it
(``Task.text_choices``): a ``caption`` example (its caption against its negatives) or a
``group`` triplet (image i, caption i against caption 1 - i, as the predicate-noun paper
counts). The model's choice is read off the example's score grid (row i is the choice's
image; equal texts score identically, so a text's first column stands for it); the prior's
choice is the text with the lowest perplexity. Units the prior gets wrong are hard.
Kinds without a choice between texts (``image``, ``match``) get a block that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_vlcheck import fmt
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.metrics.choice import beats_all
from pytest_vlcheck.metrics.priors import (
    Perplexity,
    hard_test_stats,
    perplexity_grid,
    prior_choices,
)
from pytest_vlcheck.results import ExampleOutcome
from pytest_vlcheck.results.blocks import Prior, PriorBlock, PriorNotApplicable
from pytest_vlcheck.tasks import get_task

GRID_BINS = 5
NO_PRIOR = "hard_threshold not applied: no --vl-prior"

TextChoice = tuple[str, tuple[str, ...]]


def choice_units(
    test: ChecklistTest, outcomes: Sequence[ExampleOutcome]
) -> tuple[list[TextChoice], np.ndarray]:
    """Each scored example's text choices and whether the model made each one right."""
    task = get_task(test.task)
    by_id = {example.id: example for example in test.examples}
    units: list[TextChoice] = []
    right: list[bool] = []
    for outcome in outcomes:
        example = by_id[outcome.id]
        _, texts = task.grid(example)
        column = {text: j for j, text in reversed(list(enumerate(texts)))}
        scores = np.asarray(outcome.scores, dtype=np.float32)
        for i, (true_text, others) in enumerate(task.text_choices(example)):
            row = scores[min(i, scores.shape[0] - 1)]
            other_scores = row[[column[t] for t in others]][None, :]
            right.append(bool(beats_all(row[[column[true_text]]], other_scores)[0]))
            units.append((true_text, tuple(others)))
    return units, np.array(right, dtype=bool)


def prior_block(
    test: ChecklistTest,
    outcomes: Sequence[ExampleOutcome],
    perplexity: Perplexity,
    priors: Sequence[str],
) -> Prior:
    """The result's ``prior`` field: the prior's accuracy, the model's hard-test accuracy
    with its Wilson interval, the linguistic gap, the hard threshold's verdict and the
    Figure-1 grid (model accuracy over true-caption x best-negative perplexity bins)."""
    units, model_right = choice_units(test, outcomes)
    if not units:
        reason = (
            f"not applicable: {fmt.a(test.task)} test gives the prior no choice between captions "
            "(its text is fixed, or there is no choice)"
        )
        return PriorNotApplicable(tuple(priors), reason, test.hard_threshold)
    texts = sorted({t for true_text, others in units for t in (true_text, *others)})
    lookup = dict(zip(texts, np.asarray(perplexity(texts), dtype=np.float64), strict=True))
    true_ppl = np.array([lookup[true_text] for true_text, _ in units])
    other_ppl = np.full((len(units), max(len(others) for _, others in units)), np.inf)
    for i, (_, others) in enumerate(units):
        other_ppl[i, : len(others)] = [lookup[t] for t in others]
    stats = hard_test_stats(model_right, prior_choices(true_ppl, other_ppl))
    met = None
    if test.hard_threshold is not None and stats.hard_accuracy is not None:
        met = stats.hard_accuracy >= test.hard_threshold
    return PriorBlock(
        priors=tuple(priors),
        n=stats.n,
        accuracy=stats.accuracy,
        prior_accuracy=stats.prior_accuracy,
        n_hard=stats.n_hard,
        hard_passed=stats.hard_passed,
        hard_accuracy=stats.hard_accuracy,
        hard_ci_low=stats.hard_ci_low,
        hard_ci_high=stats.hard_ci_high,
        linguistic_gap=stats.gap,
        hard_threshold=test.hard_threshold,
        hard_threshold_met=met,
        grid=_grid(true_ppl, other_ppl.min(axis=1), model_right),
    )


def _grid(true_ppl: np.ndarray, best_other: np.ndarray, right: np.ndarray) -> dict[str, Any]:
    """Figure 1 over the units whose perplexities are finite (an empty text has none)."""
    finite = np.isfinite(true_ppl) & np.isfinite(best_other)
    if not finite.any():
        return {}
    grid = perplexity_grid(
        true_ppl[finite], best_other[finite], right[finite], bins=min(GRID_BINS, int(finite.sum()))
    )
    return {
        "true_edges": list(grid.true_edges),
        "negative_edges": list(grid.negative_edges),
        "n": [list(row) for row in grid.n],
        "passed": [list(row) for row in grid.passed],
        "unbinned": int((~finite).sum()),
    }


JUNIT_FIELDS = (
    "prior_accuracy",
    "n_hard",
    "hard_accuracy",
    "hard_ci_low",
    "hard_ci_high",
    "linguistic_gap",
    "hard_threshold",
)


def junit_properties(block: Prior) -> list[tuple[str, Any]]:
    """JUnit properties for a prior block: ``vlcheck_prior`` names the priors (or says why
    none applies), then ``vlcheck_prior_accuracy``, ``vlcheck_hard_accuracy``, ..."""
    names = "+".join(block.priors)
    if isinstance(block, PriorNotApplicable):
        return [("vlcheck_prior", f"{names}: {block.reason}" if names else block.reason)]
    values = ((key, getattr(block, key)) for key in JUNIT_FIELDS)
    return [("vlcheck_prior", names)] + [
        (f"vlcheck_{key}", value) for key, value in values if value is not None
    ]
