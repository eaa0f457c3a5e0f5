"""Typed checklist objects: what the loader produces and the engine consumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pytest_vlcheck.images.refs import ImageRef

TaskKind = Literal["caption", "image", "group", "match"]
TASKS: tuple[TaskKind, ...] = ("caption", "image", "group", "match")
GroupCriterion = Literal["text", "image", "group"]
GROUP_CRITERIA: tuple[GroupCriterion, ...] = ("text", "image", "group")


@dataclass(frozen=True)
class CaptionExample:
    """One image; the true caption must outscore every negative caption."""

    id: str
    image: ImageRef
    caption: str
    negatives: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class ImageExample:
    """One text (or prompt ensemble); the true image must outscore every distractor.

    With several prompts, an image's score is the mean of its similarity to each prompt.
    """

    id: str
    texts: tuple[str, ...]
    image: ImageRef
    distractors: tuple[ImageRef, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class GroupExample:
    """Two images and two captions; caption i is true for image i (Winoground layout)."""

    id: str
    images: tuple[ImageRef, ImageRef]
    captions: tuple[str, str]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class MatchExample:
    """One image-caption pair with a match / no-match label (binary ITM)."""

    id: str
    image: ImageRef
    caption: str
    label: bool
    neg_types: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


Example = CaptionExample | ImageExample | GroupExample | MatchExample


@dataclass(frozen=True)
class MacroSpec:
    """A macro average over one tag (ARO's per-relation mean), reported beside the pass rate."""

    tag: str
    min_count: int = 1
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChecklistTest:
    """One capability test: a task kind, a threshold on the pass rate, and its examples."""

    id: str
    capability: str
    task: TaskKind
    threshold: float
    examples: tuple[Example, ...]
    file: Path
    line: int
    description: str = ""
    criterion: GroupCriterion = "group"
    cutoff: float = 0.5
    macro: MacroSpec | None = None

    @property
    def capability_parts(self) -> tuple[str, ...]:
        """The taxonomy path split into segments: ``attribute/color`` -> (attribute, color)."""
        return tuple(self.capability.split("/"))


@dataclass(frozen=True)
class Checklist:
    """A checklist file: its tests in file order."""

    path: Path
    tests: tuple[ChecklistTest, ...]
