"""Blind baselines on the bundled checklists: how far can a scorer get without the image?

A checklist whose negatives can be told apart from the true caption by the text alone
measures language priors, not vision (the point of "The Role of Linguistic Priors in
Measuring Compositional Generalization of VLMs" about ARO). This script scores every
example of the bundled checklists with scorers that never look at the pixels:

- ``bigram``: add-one bigram language model fitted on the test's own true captions
  (log-probability of the caption); the strongest prior available here, since it has
  seen every true caption.
- ``unigram``: the same with word frequencies only.
- ``short`` / ``long``: prefer the shorter / longer caption.
- ``overlap``: prefer the candidate sharing the most words with the other candidates
  (the "negatives are edits of the truth" heuristic).
- ``img-area`` / ``img-count``: image tasks only; prefer the scene with the largest total
  object area / the most objects (read from the scene spec: an image prior, no text).

Caption and image tasks: an example counts as passed with weight 1/t when the true
candidate is among t tied best (random tie-breaking), so a constant scorer sits at chance.
Match tasks: accuracy at the best single cut-off on the blind score (an upper bound for the
scorer). Group tasks: Winoground group score with blind scores (text-only scores make one
caption win on both images, so they can never pass). Prints one row per test.

Usage: python benchmarks/text_only_baseline.py [CHECKLIST.yaml ...]
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_vlcheck.bundled import bundled_checklists
from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.checklist.schema import (
    CaptionExample,
    ChecklistTest,
    GroupExample,
    ImageExample,
    MatchExample,
)
from pytest_vlcheck.images.refs import ImageRef

TextScorer = Callable[[str, Sequence[str]], float]  # (candidate, all candidates) -> score


def _words(text: str) -> list[str]:
    return text.lower().split()


class NGramModel:
    """Add-one smoothed unigram or bigram model over whitespace tokens."""

    def __init__(self, texts: Sequence[str], order: int) -> None:
        self.order = order
        self.unigrams: Counter[str] = Counter()
        self.bigrams: Counter[tuple[str, str]] = Counter()
        for text in texts:
            tokens = ["<s>", *_words(text), "</s>"]
            self.unigrams.update(tokens)
            self.bigrams.update(itertools.pairwise(tokens))
        self.vocab = len(self.unigrams) + 1
        self.total = sum(self.unigrams.values())

    def logprob(self, text: str) -> float:
        tokens = ["<s>", *_words(text), "</s>"]
        if self.order == 1:
            return sum(
                math.log((self.unigrams[t] + 1) / (self.total + self.vocab)) for t in tokens[1:]
            )
        return sum(
            math.log((self.bigrams[(a, b)] + 1) / (self.unigrams[a] + self.vocab))
            for a, b in itertools.pairwise(tokens)
        )


def _overlap(candidate: str, candidates: Sequence[str]) -> float:
    mine = set(_words(candidate))
    others = [set(_words(c)) for c in candidates if c != candidate]
    return sum(len(mine & o) / max(1, len(mine | o)) for o in others) / max(1, len(others))


def text_scorers(test: ChecklistTest) -> dict[str, TextScorer]:
    """The blind text scorers, fitted on this test's true captions."""
    truths = [c for e in test.examples for c in _true_texts(e)]
    bigram, unigram = NGramModel(truths, 2), NGramModel(truths, 1)
    return {
        "bigram": lambda c, _: bigram.logprob(c),
        "unigram": lambda c, _: unigram.logprob(c),
        "short": lambda c, _: -len(_words(c)),
        "long": lambda c, _: len(_words(c)),
        "overlap": _overlap,
    }


def _true_texts(example: object) -> list[str]:
    if isinstance(example, (CaptionExample, MatchExample)):
        if isinstance(example, MatchExample) and not example.label:
            return []
        return [example.caption]
    if isinstance(example, GroupExample):
        return list(example.captions)
    if isinstance(example, ImageExample):
        return list(example.texts)
    return []


def _scene_objects(ref: ImageRef) -> list[dict]:
    return json.loads(ref.location).get("objects", []) if ref.kind == "scene" else []


def image_scorers() -> dict[str, Callable[[ImageRef], float]]:
    """Image priors read from scene specs (no pixels): bigger / busier scenes win."""
    return {
        "img-area": lambda r: sum(float(o["size"]) ** 2 for o in _scene_objects(r)),
        "img-count": lambda r: float(len(_scene_objects(r))),
    }


def _choice_credit(scores: Sequence[float]) -> float:
    """Credit for candidate 0 being the best: 1/t when tied with t-1 others, 0 when beaten."""
    best = max(scores)
    if scores[0] < best:
        return 0.0
    return 1.0 / sum(1 for s in scores if s == best)


def _match_best_cut(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Accuracy of 'match iff score >= cut' at the best cut (including all/none)."""
    cuts = [*sorted(set(scores)), math.inf]
    best = 0.0
    for cut in cuts:
        right = sum((s >= cut) == lab for s, lab in zip(scores, labels, strict=True))
        best = max(best, right / len(scores))
    return best


def evaluate(test: ChecklistTest) -> tuple[float, dict[str, float]]:
    """(chance, {baseline: pass rate}) for one test."""
    examples = test.examples
    rates: dict[str, float] = {}
    if test.task == "caption":
        k = sum(len(e.negatives) + 1 for e in examples) / len(examples)  # type: ignore[union-attr]
        for name, f in text_scorers(test).items():
            credit = 0.0
            for e in examples:
                cands = [e.caption, *e.negatives]  # type: ignore[union-attr]
                credit += _choice_credit([f(c, cands) for c in cands])
            rates[name] = credit / len(examples)
        return 1.0 / k, rates
    if test.task == "image":
        k = sum(len(e.distractors) + 1 for e in examples) / len(examples)  # type: ignore[union-attr]
        for name, g in image_scorers().items():
            credit = sum(
                _choice_credit([g(r) for r in (e.image, *e.distractors)])  # type: ignore[union-attr]
                for e in examples
            )
            rates[name] = credit / len(examples)
        return 1.0 / k, rates
    if test.task == "match":
        labels = [e.label for e in examples]  # type: ignore[union-attr]
        for name, f in text_scorers(test).items():
            scores = [f(e.caption, [e.caption]) for e in examples]  # type: ignore[union-attr]
            rates[name] = _match_best_cut(scores, labels)
        return 0.5, rates
    # group: text-only s(c, i) = f(c); image-only s(c, i) = g(i); group needs both to flip.
    for name, f in text_scorers(test).items():
        passed = 0
        for e in examples:
            c0, c1 = e.captions  # type: ignore[union-attr]
            s0, s1 = f(c0, [c0, c1]), f(c1, [c0, c1])
            passed += int(s0 > s1 and s1 > s0)  # the text score can never hold for both
        rates[name] = passed / len(examples)
    return 1.0 / 6.0, rates


def main(argv: Sequence[str]) -> int:
    paths = [Path(a) for a in argv] or bundled_checklists()
    header = f"{'file::test':38} {'task':7} {'n':>4} {'chance':>7}  baselines (pass rate)"
    print(header)
    print("-" * len(header))
    for path in paths:
        for test in load_checklist(path).tests:
            chance, rates = evaluate(test)
            cells = "  ".join(f"{k}={v:.3f}" for k, v in rates.items())
            best = max(rates.values())
            flag = "  <-- text prior beats chance" if best > chance + 0.05 else ""
            name = f"{path.name}::{test.id}"
            print(f"{name:38} {test.task:7} {len(test.examples):4d} {chance:7.3f}  {cells}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
