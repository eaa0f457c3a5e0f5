"""``match`` with ``decide: yes_vs_no``: the model's own decision, P(Yes) > P(No) (POPE,
NaturalBench), instead of a score against a cut-off.

The example's ``question`` is asked verbatim (POPE's "Is there a dog in the image?"); without
one the caption goes into VQAScore's question. Ties (equal log-probabilities) are neither
yes nor no: they fail. Beside match's accuracies, POPE's yes-ratio, precision, recall and F1
(``yes`` the positive class).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_vlcheck import metrics
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.metrics.answers import yes_no_metrics
from pytest_vlcheck.tasks.asking import Ask, Reply
from pytest_vlcheck.tasks.protocol import Judgement

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.match import MatchExample

DECIDES = ("cutoff", "yes_vs_no")
CANDIDATES = ("Yes", "No")
CAPTION_QUESTION = 'Does this figure show "{}"? Please answer yes or no.'


def yes_no_ask(example: MatchExample) -> Ask:
    """The example's question (or the caption's) with ``Yes`` and ``No`` as the candidates."""
    question = example.question or CAPTION_QUESTION.format(example.caption)
    return Ask("next_token", example.image, question, CANDIDATES)


def judge_yes_no(examples: Sequence[MatchExample], replies: Sequence[list[Reply]]) -> Judgement:
    """Each decision against the label; match's accuracies and POPE's metrics."""
    scores = np.array([reply.scores for (reply,) in replies], dtype=np.float32).reshape(-1, 2)
    said_yes = scores[:, 0] > scores[:, 1]
    ties = scores[:, 0] == scores[:, 1]
    labels = np.array([e.label for e in examples], dtype=bool)
    correct = (said_yes == labels) & ~ties
    extra = metrics.match_accuracies(correct, labels, [e.neg_types for e in examples])
    extra.update(yes_no_metrics(said_yes.tolist(), labels.tolist()))
    said = tuple(
        {"prompt": reply.rendered, "extracted": None if tie else ("yes" if yes else "no")}
        for (reply,), yes, tie in zip(replies, said_yes, ties, strict=True)
    )
    grids = tuple(row[None, :] for row in scores)
    return Judgement(correct, ties, extra, metrics.MATCH_CHANCE, "log-probability", said, grids)


def describe_yes_no(example: MatchExample, said: Mapping[str, Any]) -> str:
    """The question, the label and the model's answer."""
    label = "yes" if example.label else "no"
    question = example.question or CAPTION_QUESTION.format(example.caption)
    return f"{example.image.describe()} / {question!r}: expected {label}, said {said['extracted']}"
