"""Blind baselines: how often a scorer that never sees the image picks the true text.

Every baseline is kept from the example it judges: the n-gram models are fitted on the true
texts of the test's other examples (leave-one-out), and the length and overlap rules choose
their direction (prefer more or fewer) on the other examples. A tie counts as wrong, as for
models. A prior (a language model) is fitted elsewhere and needs no hold-out.

- ``unigram`` / ``bigram``: add-one smoothed word models; the text's log-probability.
- ``length``: the longer (or shorter) text in words.
- ``overlap``: the text sharing the most (or fewest) words with the other candidates
  (negatives made by editing the truth share most with it).
- ``prior``: the lowest perplexity (``--prior``).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_vlcheck.audit.subject import TextChoice, words
from pytest_vlcheck.metrics.choice import wilson_interval
from pytest_vlcheck.metrics.priors import Perplexity, prior_choices


@dataclass(frozen=True)
class BaselineResult:
    """A blind baseline on one test: its pass count and 95% Wilson interval."""

    name: str
    n: int
    passed: int
    ci_low: float
    ci_high: float

    @property
    def rate(self) -> float:
        return self.passed / self.n if self.n else 0.0


class _Counts:
    """Unigram and bigram counts of a set of texts (with <s> and </s> markers)."""

    def __init__(self, texts: Sequence[str] = ()) -> None:
        self.uni: Counter[str] = Counter()
        self.bi: Counter[tuple[str, str]] = Counter()
        for text in texts:
            tokens = ["<s>", *words(text), "</s>"]
            self.uni.update(tokens)
            self.bi.update(itertools.pairwise(tokens))
        self.total = sum(self.uni.values())


class HeldOutNGram:
    """Add-one n-gram log-probabilities from ``full`` counts minus one example's ``held``."""

    def __init__(self, full: _Counts, held: _Counts, order: int) -> None:
        self.full, self.held, self.order = full, held, order
        removed = sum(1 for t, c in held.uni.items() if full.uni[t] == c)
        self.vocab = len(full.uni) - removed + 1
        self.total = full.total - held.total

    def _uni(self, token: str) -> int:
        return self.full.uni[token] - self.held.uni[token]

    def logprob(self, text: str) -> float:
        tokens = ["<s>", *words(text), "</s>"]
        if self.order == 1:
            denominator = self.total + self.vocab
            return sum(math.log((self._uni(t) + 1) / denominator) for t in tokens[1:])
        return sum(
            math.log(
                (self.full.bi[(a, b)] - self.held.bi[(a, b)] + 1) / (self._uni(a) + self.vocab)
            )
            for a, b in itertools.pairwise(tokens)
        )


def _strictly_best(scores: Sequence[float]) -> bool:
    """Whether the first score is strictly above every other (a tie is wrong)."""
    return all(scores[0] > other for other in scores[1:])


def _by_example(choices: Sequence[TextChoice]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for index, choice in enumerate(choices):
        groups[choice.example_id].append(index)
    return groups


def _ngram_correct(choices: Sequence[TextChoice], order: int) -> np.ndarray:
    full = _Counts([c.true_text for c in choices])
    correct = np.zeros(len(choices), dtype=bool)
    for indices in _by_example(choices).values():
        held = _Counts(sorted({choices[i].true_text for i in indices}))
        model = HeldOutNGram(full, held, order)
        for i in indices:
            texts = (choices[i].true_text, *choices[i].other_texts)
            correct[i] = _strictly_best([model.logprob(t) for t in texts])
    return correct


def _overlap(candidate: str, candidates: Sequence[str]) -> float:
    mine = set(words(candidate))
    others = [set(words(c)) for c in candidates if c != candidate]
    return sum(len(mine & o) / max(1, len(mine | o)) for o in others) / max(1, len(others))


def _directed_correct(
    choices: Sequence[TextChoice], feature: Callable[[str, Sequence[str]], float]
) -> np.ndarray:
    """Prefer the larger (or smaller) feature, the direction chosen on the other examples."""
    wins = np.zeros((len(choices), 2), dtype=bool)  # column 0: prefer larger, 1: smaller
    for i, choice in enumerate(choices):
        texts = (choice.true_text, *choice.other_texts)
        values = [feature(t, texts) for t in texts]
        wins[i] = (_strictly_best(values), _strictly_best([-v for v in values]))
    totals = wins.sum(axis=0)
    correct = np.zeros(len(choices), dtype=bool)
    for indices in _by_example(choices).values():
        rest = totals - wins[indices].sum(axis=0)
        direction = 0 if rest[0] >= rest[1] else 1
        correct[indices] = wins[indices, direction]
    return correct


def _prior_correct(choices: Sequence[TextChoice], perplexity: Perplexity) -> np.ndarray:
    texts = sorted({t for c in choices for t in (c.true_text, *c.other_texts)})
    lookup = dict(zip(texts, perplexity(texts), strict=True))
    width = max(len(c.other_texts) for c in choices)
    others = np.full((len(choices), width), np.inf)
    for i, choice in enumerate(choices):
        others[i, : len(choice.other_texts)] = [lookup[t] for t in choice.other_texts]
    return prior_choices(np.array([lookup[c.true_text] for c in choices]), others)


def baseline_outcomes(
    choices: Sequence[TextChoice], perplexity: Perplexity | None = None
) -> dict[str, np.ndarray]:
    """Per-choice correctness of every blind baseline (and of the prior when given)."""
    outcomes = {
        "unigram": _ngram_correct(choices, 1),
        "bigram": _ngram_correct(choices, 2),
        "length": _directed_correct(choices, lambda t, _: float(len(words(t)))),
        "overlap": _directed_correct(choices, _overlap),
    }
    if perplexity is not None:
        outcomes["prior"] = _prior_correct(choices, perplexity)
    return outcomes


def blind_baselines(
    choices: Sequence[TextChoice], perplexity: Perplexity | None = None
) -> list[BaselineResult]:
    """Each baseline's pass count over the choices, with its Wilson interval."""
    results = []
    for name, correct in baseline_outcomes(choices, perplexity).items():
        passed = int(correct.sum())
        low, high = wilson_interval(passed, len(choices))
        results.append(BaselineResult(name, len(choices), passed, low, high))
    return results
