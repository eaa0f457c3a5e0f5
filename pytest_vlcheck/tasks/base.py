"""Defaults and helpers the task kinds share: a kind overrides only what it means."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_vlcheck import metrics
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.metrics.choice import ScoreRow
from pytest_vlcheck.parsing.example_fields import ParseContext
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.protocol import GenerationRules, Judgement


class BaseTask:
    """No settings, no verdict notes, no text choices, mirrored generation."""

    name = ""
    example_keys: tuple[str, ...] = ()
    optional_example_keys: tuple[str, ...] = ()
    setting_keys: tuple[str, ...] = ()
    generation = GenerationRules()
    text_only = False

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """Kinds without test-level keys of their own."""
        return {}

    def verdict_notes(self, score_kind: str) -> list[str]:
        """Nothing to add by default."""
        return []

    def text_choices(self, example: Any) -> list[tuple[str, tuple[str, ...]]]:
        """No choice among texts by default."""
        return []

    def cluster_key(self, example: Any) -> str | None:
        """Each example its own cluster by default."""
        return None

    def parse_plain_examples(
        self, context: ParseContext, test_id: str, raws: Sequence[Any], lines: Sequence[int]
    ) -> tuple[Any, ...] | None:
        """No fast path by default: every example is validated in full."""
        return None

    def __repr__(self) -> str:
        return f"<task {self.name}>"


def choose_one(
    true_scores: Sequence[float], other_scores: Sequence[ScoreRow], ties: str = "fail"
) -> Judgement:
    """The true candidate (listed first) must beat every other under the ``ties`` rule; NaN
    fails. ``Judgement.ties`` marks the examples an exact tie decided, under any rule.
    """
    true = np.asarray(true_scores, dtype=np.float32)
    others = metrics.pad_rows(other_scores)
    correct = metrics.beats_all(true, others, ties=ties)
    return Judgement(correct=correct, ties=metrics.decided_by_tie(true, others), chance=0.0)


def choose_by_rules(
    true_scores: Sequence[float],
    other_scores: Sequence[ScoreRow],
    rules: Sequence[str],
    positions: Sequence[int] | None = None,
) -> Judgement:
    """``choose_one`` with a tie rule per example (an example may override its test's). The
    true candidate is listed first, so ``first`` lets it win a tie and ``fail`` and ``last``
    do not; ``order`` puts it at ``positions[i]`` among the others (the first maximum wins)."""
    strict = choose_one(true_scores, other_scores, "fail")
    lenient = choose_one(true_scores, other_scores, "first")
    wins_ties = np.array([rule == "first" for rule in rules], dtype=bool)
    correct = np.where(wins_ties, lenient.correct, strict.correct)
    ordered = np.array([rule == "order" for rule in rules], dtype=bool)
    if ordered.any():
        at = np.asarray(positions if positions is not None else [0] * len(rules))
        in_order = metrics.beats_in_order(
            np.asarray(true_scores, dtype=np.float32), metrics.pad_rows(other_scores), at
        )
        correct = np.where(ordered, in_order, correct)
    return Judgement(correct=correct, ties=strict.ties, chance=0.0)


def image_cluster(ref: ImageRef) -> str:
    """An image's cluster: where its pixels come from (crops of one file share it)."""
    return f"{ref.kind}:{ref.location}"


def position_of(fields: Fields, others: int) -> int:
    """``position`` (``ties: order``): the true candidate's place among the others in the
    source's order, a whole number from 0 (before every other) to their count."""
    value = fields.number("position", low=0, high=others)
    if value != int(value):
        fields.fail(f"'position' is {value:g}; expected a whole number 0-{others}", "position")
    return int(value)


def parse_ties(fields: Fields) -> dict[str, Any]:
    """``ties``: which of tied candidates wins (``fail``, the default: none does)."""
    return {"ties": fields.choice("ties", metrics.TIE_RULES, "fail")}


def mean_chance(counts: Sequence[int]) -> float:
    """Chance of picking the true one of ``k`` candidates uniformly, averaged over examples."""
    return metrics.choice_chance(counts)


def scored_texts(texts: Sequence[str], scores: Sequence[float]) -> str:
    """``'a red circle' 0.3100, 'a blue circle' 0.2900`` for failure details."""
    return ", ".join(f"{t!r} {s:.4f}" for t, s in zip(texts, scores, strict=True))


def mapping_of(settings: Mapping[str, Any], key: str, default: Any) -> Any:
    """A setting with its default (tests made in Python may leave settings out)."""
    return settings.get(key, default)
