"""Plain data the audit works on, and the one adapter from a loaded checklist test."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vlcheck.checklist.schema import (
    CaptionExample,
    ChecklistTest,
    GroupExample,
    ImageExample,
    MatchExample,
)
from pytest_vlcheck.images.refs import ImageRef

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """Lower-cased words with punctuation removed: what the text checks compare."""
    return _WORD.findall(text.lower())


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
    """Turn a loaded test into TextChoices: caption tests give one per example (its image,
    caption vs negatives); group tests one per triplet (image i, caption i vs caption 1 - i).
    """
    choices: list[TextChoice] = []
    note = ""
    for e in test.examples:
        if isinstance(e, CaptionExample):
            choices.append(
                TextChoice(e.id, e.line, e.caption, e.negatives, (_key(e.image),), e.tags)
            )
        elif isinstance(e, GroupExample):
            keys = tuple(_key(image) for image in e.images)
            for i in (0, 1):
                own = (keys[i], keys[1 - i])
                choices.append(
                    TextChoice(e.id, e.line, e.captions[i], (e.captions[1 - i],), own, e.tags)
                )
        elif isinstance(e, ImageExample):
            note = "not applicable: an image test's text is the same for every candidate"
            keys = (_key(e.image), *(_key(d) for d in e.distractors))
            choices.append(TextChoice(e.id, e.line, " | ".join(e.texts), (), keys, e.tags))
        elif isinstance(e, MatchExample):
            note = "not applicable: a match test has no choice between captions"
            choices.append(TextChoice(e.id, e.line, e.caption, (), (_key(e.image),), e.tags))
    return AuditSubject(test.file, test.line, test.id, test.task, tuple(choices), note)
