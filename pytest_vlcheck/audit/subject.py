"""Plain data the audit works on, and the one adapter from a loaded checklist test."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vlcheck import fmt
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.metrics.word_order import words
from pytest_vlcheck.tasks import get_task

__all__ = ["AuditSubject", "TextChoice", "audit_subject", "words"]


@dataclass(frozen=True)
class TextChoice:
    """One choice the examples ask for: a true text against other texts, for these images.

    ``image_keys`` holds the image the choice is about first, then the example's other
    images (distractors; for a group triplet, the other image). For tasks without a choice
    between texts (``image``, ``match``) ``other_texts`` is empty: only the duplicate and
    slice checks use those.
    """

    example_id: str
    line: int
    true_text: str
    other_texts: tuple[str, ...]
    image_keys: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditSubject:
    """A test as the audit sees it; ``text_note`` says why text baselines do not apply."""

    file: Path
    line: int
    test_id: str
    task: str
    choices: tuple[TextChoice, ...]
    text_note: str = ""


def _key(ref: ImageRef) -> str:
    return repr(ref.key)


def audit_subject(test: ChecklistTest) -> AuditSubject:
    """Turn a loaded test into TextChoices, as its task kind defines them: a caption test
    gives one per example (its image, caption vs negatives), a group test one per triplet
    (image i, caption i vs caption 1 - i). Kinds without a choice between texts give one
    choice per example with no competing texts, for the duplicate and slice checks."""
    task = get_task(test.task)
    choices: list[TextChoice] = []
    note = ""
    for e in test.examples:
        refs, texts = task.grid(e)
        keys = tuple(_key(ref) for ref in refs)
        pairs = task.text_choices(e)
        if not pairs:
            note = f"not applicable: {fmt.a(test.task)} test has no choice between captions"
            choices.append(TextChoice(e.id, e.line, " | ".join(texts), (), keys, e.tags))
        for i, (true_text, others) in enumerate(pairs):
            own = keys[i] if i < len(keys) else keys[0]
            ordered = (own, *(k for k in keys if k != own))
            choices.append(TextChoice(e.id, e.line, true_text, others, ordered, e.tags))
    return AuditSubject(test.file, test.line, test.id, test.task, tuple(choices), note)
