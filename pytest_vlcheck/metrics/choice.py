"""Task metrics as the papers define them: choices among candidates, Winoground, ITM.

Every comparison is strict (a tie fails) unless a test's ``ties:`` rule says which of tied
candidates wins; a NaN score always fails. Scores are ``s(image, text)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from pytest_vlcheck.lazy import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile used for the Wilson interval."""

GROUP_CHANCE = {"text": 0.25, "image": 0.25, "group": 1 / 6}
"""Winoground's chance levels: 1/4 for text and image scores, 1/6 for the group score."""

MATCH_CHANCE = 0.5

TIE_RULES = ("fail", "first", "last")
"""How an exact tie among candidates reads: ``fail`` (a tie is wrong), ``first`` (the candidate
listed first wins, as ``np.argmax`` picks), ``last`` (the one listed last wins)."""

ORDERED_TIE_RULES = (*TIE_RULES, "order")
"""Caption and image tests add ``order``: the candidates stand in the source's order, the true
one at its example's ``position``, and the first maximum wins (``torch.argmax`` over the
columns, NegBench's and SPEC's rule): the true candidate wins ties with the others after it
and loses them to those before it."""


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion; (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    return wilson_interval_at(passed / n, n, z)


def wilson_interval_at(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson interval of a proportion ``p`` at a size ``n`` that may be fractional (an
    effective size n / DEFF); a bound at 0 or 1 is exact when ``p`` is."""
    if n <= 0:
        return 0.0, 1.0
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return low, high


ScoreRow: TypeAlias = "Sequence[float] | np.ndarray"
"""One example's scores: a list or a row of a grid (a string: numpy is imported on first use)."""


def pad_rows(rows: Sequence[ScoreRow]) -> np.ndarray:
    """Ragged rows as one fp32 matrix, padded with -inf (which every real score beats)."""
    width = max((len(row) for row in rows), default=0)
    out = np.full((len(rows), width), -np.inf, dtype=np.float32)
    for index, row in enumerate(rows):
        out[index, : len(row)] = row
    return out


def beats_all(
    true_scores: np.ndarray, other_scores: np.ndarray, *, ties: str = "fail"
) -> npt.NDArray[np.bool_]:
    """Whether each true score is above every other score of its row.

    This is the ``caption`` criterion (true caption vs negative captions of one image) and the
    ``image`` criterion (true image vs distractor images for one text). ``other_scores`` is
    [N, K], padded with -inf; a NaN anywhere in a row fails it. The true candidate is listed
    before the others, so under ``ties="first"`` it wins a tie; under ``fail`` and ``last``
    (a tied other, listed later, wins) it loses it.
    """
    if ties not in TIE_RULES:
        raise ValueError(f"ties is {ties!r}; expected one of {TIE_RULES}")
    true_scores = np.asarray(true_scores, dtype=np.float32)
    other_scores = np.asarray(other_scores, dtype=np.float32)
    if other_scores.shape[1] == 0:
        raise ValueError("each example needs at least one negative")
    beats = np.greater_equal if ties == "first" else np.greater
    passed: npt.NDArray[np.bool_] = np.all(beats(true_scores[:, None], other_scores), axis=1)
    return passed


def beats_in_order(
    true_scores: np.ndarray, other_scores: np.ndarray, positions: np.ndarray
) -> npt.NDArray[np.bool_]:
    """Whether each true candidate is the first maximum of its row in column order.

    Row i's true candidate stands at column ``positions[i]`` among ``other_scores[i]`` (the
    others in their column order, padded with -inf): it must be above every other before it
    and at least equal to every other after it, as ``argmax`` (first maximum) picks. A NaN
    anywhere in a row fails it. Position 0 is ``beats_all(..., ties="first")``.
    """
    true_scores = np.asarray(true_scores, dtype=np.float32)
    other_scores = np.asarray(other_scores, dtype=np.float32)
    positions = np.asarray(positions, dtype=np.int64)
    if other_scores.shape[1] == 0:
        raise ValueError("each example needs at least one negative")
    before = np.arange(other_scores.shape[1])[None, :] < positions[:, None]
    above = np.greater(true_scores[:, None], other_scores)
    level = np.greater_equal(true_scores[:, None], other_scores)
    passed: npt.NDArray[np.bool_] = np.all(np.where(before, above, level), axis=1)
    return passed


def decided_by_tie(true_scores: np.ndarray, other_scores: np.ndarray) -> npt.NDArray[np.bool_]:
    """Examples whose outcome an exact tie decides: they pass when ties count as wins and fail
    when ties count as losses (whatever the test's rule, the same examples)."""
    lenient = beats_all(true_scores, other_scores, ties="first")
    return lenient & ~beats_all(true_scores, other_scores)


def prompt_ensemble(scores: np.ndarray) -> npt.NDArray[np.float32]:
    """An image's score for a prompt ensemble: its mean similarity over the prompts (Compun).

    ``scores`` is [images, prompts]; the mean is taken in float64 and returned as fp32.
    """
    mean: npt.NDArray[np.float64] = np.asarray(scores, dtype=np.float64).mean(axis=1)
    return mean.astype(np.float32)


def group_outcomes(scores: np.ndarray, *, strict: bool = True) -> dict[str, np.ndarray]:
    """Winoground's text, image and group scores per example.

    ``scores`` is [N, 2, 2] with ``scores[n, i, j] = s(image_i, caption_j)`` and caption i
    true for image i. ``text``: each image prefers its own caption (the predicate-noun
    paper's counter-balanced pair metric); ``image``: each caption prefers its own image;
    ``group``: both. ``strict=False`` counts ties as wins (to count examples lost by a tie).
    """
    s = np.asarray(scores, dtype=np.float32)
    beats = np.greater if strict else np.greater_equal
    text = beats(s[:, 0, 0], s[:, 0, 1]) & beats(s[:, 1, 1], s[:, 1, 0])
    image = beats(s[:, 0, 0], s[:, 1, 0]) & beats(s[:, 1, 1], s[:, 0, 1])
    return {"text": text, "image": image, "group": text & image}


def group_caption_choices(scores: np.ndarray) -> np.ndarray:
    """Per image, whether it prefers its own caption: [N, 2] booleans.

    Each row is one counter-balanced pair of triplets ([I1, S1, S2], [I2, S2, S1]); the mean
    is the predicate-noun paper's per-triplet accuracy (chance 50%).
    """
    s = np.asarray(scores, dtype=np.float32)
    return np.stack([s[:, 0, 0] > s[:, 0, 1], s[:, 1, 1] > s[:, 1, 0]], axis=1)


def match_correct(scores: np.ndarray, labels: np.ndarray, cutoff: float) -> np.ndarray:
    """Binary image-text matching: a match needs score >= cutoff, a non-match score < cutoff."""
    s = np.asarray(scores, dtype=np.float32)
    labels = np.asarray(labels, dtype=bool)
    return np.where(labels, s >= cutoff, s < cutoff)


def match_accuracies(
    correct: np.ndarray, labels: np.ndarray, neg_types: Sequence[tuple[str, ...]]
) -> dict[str, float]:
    """SVO-Probes' accuracies: positive, negative and their equal-weight average.

    Also per negative type: ``neg_types[i]`` lists every type example i carries, and the
    example counts in each of them (SVO-Probes' analysis counts a positive pair once in every
    type of negative it was paired with). Keys are ``positive_accuracy``,
    ``negative_accuracy``, ``average_accuracy`` and the same with a ``neg_type=NAME/``
    prefix. An accuracy over no examples is left out.
    """
    correct = np.asarray(correct, dtype=bool)
    labels = np.asarray(labels, dtype=bool)
    if len(neg_types) != len(correct):
        raise ValueError(f"{len(neg_types)} type tuples for {len(correct)} examples")
    out = _pos_neg_average(correct, labels, "")
    for name in sorted({name for types in neg_types for name in types}):
        mask = np.array([name in types for types in neg_types], dtype=bool)
        out.update(_pos_neg_average(correct[mask], labels[mask], f"neg_type={name}/"))
    return out


def _pos_neg_average(correct: np.ndarray, labels: np.ndarray, prefix: str) -> dict[str, float]:
    out: dict[str, float] = {}
    if labels.any():
        out[prefix + "positive_accuracy"] = float(correct[labels].mean())
    if (~labels).any():
        out[prefix + "negative_accuracy"] = float(correct[~labels].mean())
    if labels.any() and (~labels).any():
        positive = out[prefix + "positive_accuracy"]
        out[prefix + "average_accuracy"] = (positive + out[prefix + "negative_accuracy"]) / 2
    return out


def choice_chance(candidate_counts: Sequence[int]) -> float:
    """Chance pass rate when each example picks one of ``k`` candidates uniformly."""
    if not candidate_counts:
        return 0.0
    return float(np.mean([1.0 / k for k in candidate_counts]))


def top_set_chance(candidate_counts: Sequence[int], true_counts: Sequence[int]) -> float:
    """Chance pass rate when each example's t true candidates must all rank above its other
    n - t candidates and the order is uniformly random: the mean of 1 / C(n, t)."""
    if not candidate_counts:
        return 0.0
    pairs = zip(candidate_counts, true_counts, strict=True)
    return float(np.mean([1.0 / math.comb(n, t) for n, t in pairs]))


def slice_rates(
    correct: np.ndarray, tags: Sequence[Mapping[str, str]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Pass rate broken down by every tag value: ``{tag: {value: {n, passed, pass_rate}}}``."""
    correct = np.asarray(correct, dtype=bool)
    counts: dict[str, dict[str, list[int]]] = {}
    for ok, example_tags in zip(correct, tags, strict=True):
        for name, value in example_tags.items():
            cell = counts.setdefault(name, {}).setdefault(value, [0, 0])
            cell[0] += 1
            cell[1] += int(ok)
    return {
        name: {
            value: {"n": n, "passed": passed, "pass_rate": passed / n}
            for value, (n, passed) in sorted(values.items())
        }
        for name, values in sorted(counts.items())
    }
