"""Linguistic-prior metrics (seed 001): the prior's choice, hard-test accuracy, the gap, Figure 1.

A prior is a text-only language model that scores each caption by its perplexity and picks
the caption with the lowest one, never looking at the image. Examples the prior gets wrong
are "hard"; a model's accuracy on them is its hard-test accuracy, and the linguistic gap is
its overall accuracy minus its hard-test accuracy (a model that follows the prior has a
large positive gap).

For ``group`` tests the unit is the triplet of the predicate-noun paper: (an image, its
caption, the other caption). Callers pass per-triplet arrays of shape [N, 2] (triplet i of
an example is image i with caption i against caption 1 - i) flattened to [2N] or as is;
``hard_test_stats`` and ``perplexity_grid`` ravel their inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_vlcheck.metrics.choice import wilson_interval

Perplexity = Callable[[Sequence[str]], np.ndarray]
"""Texts -> their (averaged) perplexity; lower is more likely."""


def mean_perplexity(nll_per_prior: Sequence[np.ndarray]) -> npt.NDArray[np.float64]:
    """Average several priors as perplexities, as the seed's AVG_LM does: mean_p exp(nll_p)."""
    if not nll_per_prior:
        raise ValueError("at least one prior is needed")
    stacked = np.stack([np.asarray(nll, dtype=np.float64) for nll in nll_per_prior])
    mean: npt.NDArray[np.float64] = np.exp(stacked).mean(axis=0)
    return mean


def prior_choices(true_ppl: np.ndarray, other_ppl: np.ndarray) -> npt.NDArray[np.bool_]:
    """Whether the prior picks the true caption: its perplexity is strictly the lowest.

    ``other_ppl`` is [N, K], padded with +inf (which never beats a real perplexity). A tie
    counts as wrong, and so does a NaN.
    """
    true_ppl = np.asarray(true_ppl, dtype=np.float64)
    other_ppl = np.asarray(other_ppl, dtype=np.float64)
    if other_ppl.ndim != 2 or other_ppl.shape[0] != true_ppl.shape[0]:
        raise ValueError("other_ppl must be [N, K] with one row per true caption")
    picked: npt.NDArray[np.bool_] = np.all(true_ppl[:, None] < other_ppl, axis=1)
    return picked


def group_prior_choices(caption_ppl: np.ndarray) -> np.ndarray:
    """Per-triplet prior correctness [N, 2] for group examples from caption perplexities [N, 2].

    Triplet i (image i) is right when the prior prefers caption i over caption 1 - i; at most
    one triplet of an example can be right, so the prior sits at chance by construction.
    """
    ppl = np.asarray(caption_ppl, dtype=np.float64)
    return np.stack([ppl[:, 0] < ppl[:, 1], ppl[:, 1] < ppl[:, 0]], axis=1)


@dataclass(frozen=True)
class HardTestStats:
    """The seed's numbers for one test: hard examples are those the prior gets wrong."""

    n: int
    accuracy: float
    prior_accuracy: float
    n_hard: int
    hard_passed: int
    hard_accuracy: float | None  # None when no example is hard
    hard_ci_low: float | None
    hard_ci_high: float | None
    gap: float | None  # accuracy - hard_accuracy (the linguistic gap)


def hard_test_stats(model_correct: np.ndarray, prior_correct: np.ndarray) -> HardTestStats:
    """Overall, prior and hard-test accuracy with a 95% Wilson interval, and the gap.

    Both inputs are per unit (an example, or a flattened group triplet) and must align.
    """
    model = np.asarray(model_correct, dtype=bool).ravel()
    prior = np.asarray(prior_correct, dtype=bool).ravel()
    if model.shape != prior.shape:
        raise ValueError(f"model ({model.size}) and prior ({prior.size}) outcomes differ in size")
    if model.size == 0:
        raise ValueError("no outcomes")
    hard = ~prior
    n_hard = int(hard.sum())
    hard_passed = int(model[hard].sum())
    accuracy = float(model.mean())
    if n_hard == 0:
        hard_accuracy = low = high = gap = None
    else:
        hard_accuracy = hard_passed / n_hard
        low, high = wilson_interval(hard_passed, n_hard)
        gap = accuracy - hard_accuracy
    return HardTestStats(
        n=int(model.size),
        accuracy=accuracy,
        prior_accuracy=float(prior.mean()),
        n_hard=n_hard,
        hard_passed=hard_passed,
        hard_accuracy=hard_accuracy,
        hard_ci_low=low,
        hard_ci_high=high,
        gap=gap,
    )


@dataclass(frozen=True)
class PerplexityGrid:
    """The analysis of the seed's Figure 1: model accuracy per (true-caption ppl bin,
    best-negative ppl bin). The paper cuts each range into 10 even intervals and shows cells
    of at least 10 samples; here the bins are quantiles (5 by default, ``GRID_BINS``), so each
    row and column holds about as many units and a small suite has no empty rows.

    ``n[i, j]`` and ``passed[i, j]`` count the units whose true-caption perplexity falls in
    bin i (edges ``true_edges``) and whose best (lowest) negative perplexity falls in bin j.
    Low true / high negative perplexity (top right) is where the prior is most confident.
    """

    true_edges: tuple[float, ...]
    negative_edges: tuple[float, ...]
    n: tuple[tuple[int, ...], ...]
    passed: tuple[tuple[int, ...], ...]


def quantile_edges(values: np.ndarray, bins: int) -> np.ndarray:
    """``bins + 1`` edges at evenly spaced quantiles (repeated edges collapse their bins)."""
    return np.quantile(np.asarray(values, dtype=np.float64), np.linspace(0.0, 1.0, bins + 1))


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value: bin b holds edges[b] <= v < edges[b + 1]; the last bin is closed."""
    inner = edges[1:-1]
    return np.searchsorted(inner, np.asarray(values, dtype=np.float64), side="right")


def perplexity_grid(
    true_ppl: np.ndarray, best_negative_ppl: np.ndarray, model_correct: np.ndarray, bins: int = 5
) -> PerplexityGrid:
    """Count units and model passes over quantile bins of both perplexities (finite inputs)."""
    true_ppl = np.asarray(true_ppl, dtype=np.float64).ravel()
    negative = np.asarray(best_negative_ppl, dtype=np.float64).ravel()
    correct = np.asarray(model_correct, dtype=bool).ravel()
    if not (true_ppl.size == negative.size == correct.size) or true_ppl.size == 0:
        raise ValueError("the three inputs need the same, non-zero length")
    if bins < 1:
        raise ValueError("bins must be at least 1")
    true_edges = quantile_edges(true_ppl, bins)
    negative_edges = quantile_edges(negative, bins)
    rows = bin_index(true_ppl, true_edges)
    cols = bin_index(negative, negative_edges)
    n = np.zeros((bins, bins), dtype=int)
    passed = np.zeros((bins, bins), dtype=int)
    np.add.at(n, (rows, cols), 1)
    np.add.at(passed, (rows, cols), correct.astype(int))
    return PerplexityGrid(
        true_edges=tuple(float(e) for e in true_edges),
        negative_edges=tuple(float(e) for e in negative_edges),
        n=tuple(tuple(int(v) for v in row) for row in n),
        passed=tuple(tuple(int(v) for v in row) for row in passed),
    )
