"""Typed checklist objects: what the loader produces and the engine consumes.

Examples are typed by their task kind (``pytest_vlcheck.tasks``); a test carries its kind's
name and the settings that kind parsed (e.g. a group test's ``criterion``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.tasks.protocol import Example


@dataclass(frozen=True)
class MacroSpec:
    """A macro average over one tag's values (ARO's per-relation mean), reported beside the
    micro pass rate; ``judge`` makes it the number the threshold judges."""

    tag: str
    min_count: int = 1
    exclude: tuple[str, ...] = ()
    judge: bool = False


@dataclass(frozen=True)
class ChecklistTest:
    """One capability test: a task kind, a threshold on the pass rate, and its examples."""

    id: str
    capability: str
    task: str
    threshold: float
    examples: tuple[Example, ...] = field(repr=False)
    file: Path
    line: int
    description: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    macro: MacroSpec | None = None
    all_of: tuple[str, ...] = ()
    """Tags whose groups (examples sharing a value) count right only when all members are."""
    cluster: str = ""
    """The tag whose value clusters examples for the clustered interval and gate; empty: the
    task kind's cluster (the image of a caption test ...)."""
    content_hash: str = ""
    hard_threshold: float | None = None
    known_failures: Mapping[str, str] = field(default_factory=dict)
    """Model name -> why the test is expected to fail on it (pytest's strict xfail)."""
    """Minimum hard-test accuracy (seed 001); judged only when a run has a --vl-prior."""
    examples_file: Path | None = None
    """The JSON Lines file the examples' lines are in (``examples: x.jsonl``); else None."""

    @property
    def capability_parts(self) -> tuple[str, ...]:
        """The taxonomy path split into segments: ``attribute/color`` -> (attribute, color)."""
        return tuple(self.capability.split("/"))

    @property
    def criterion(self) -> str:
        """A group test's pass criterion; empty for the other kinds."""
        criterion: str = self.settings.get("criterion", "")  # settings: checked on load
        return criterion


@dataclass(frozen=True)
class Checklist:
    """A checklist file: its tests in file order."""

    path: Path
    tests: tuple[ChecklistTest, ...]
