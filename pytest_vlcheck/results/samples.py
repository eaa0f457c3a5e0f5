"""``samples.jsonl``: one line per example x model, the per-example record gates compare.

A line reads ``{"file", "test", "model", "example", "correct", "tie", "scores", "texts",
"images"}``; ``scores[i][j]`` is s(image i, text j) of the example's grid (the true pairing
first), ``tie`` says an exact tie decided the example (under the test's ``ties:`` rule) and
``texts``/``images`` are the example's as the checklist wrote them. ``"cluster"`` (what the
example shares with others: its image, or its ``cluster:`` tag's value; the clustered gate's
unit) follows when the example has one; files written before it read as examples of their
own. A kind that asks a generative model adds what it asked and heard (``SAID_KEYS``):
``prompt`` (``prompts``, one per order of the options, when rotated), ``output``
(``outputs``) and ``extracted``; its ``scores`` are per-option log-probabilities, one row per
prompt, options in the example's order. Non-finite scores are written as ``null``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.atomic import atomic_path
from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep
from pytest_vlcheck.results.capability import CapabilityResult, ExampleOutcome
from pytest_vlcheck.results.json_checks import ReportFormatError
from pytest_vlcheck.results.manifest import check_report_folder

SAMPLES = "samples.jsonl"
"""The per-example file of a report folder."""

__all__ = [
    "SampleRow",
    "example_outcomes",
    "finite_rows",
    "outcomes_by_key",
    "read_samples",
    "sample_rows",
    "write_samples",
]

Key = tuple[str, str, str]
SAID_KEYS = ("prompt", "prompts", "output", "outputs", "extracted")


@dataclass(frozen=True)
class SampleRow:
    """One example scored by one model; ``file`` is relative to pytest's rootdir (POSIX)."""

    file: str
    test: str
    model: str
    example: str
    correct: bool
    tie: bool
    scores: tuple[tuple[float | None, ...], ...]
    cluster: str = ""
    texts: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    said: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.file, self.test, self.model)

    def to_json(self) -> str:
        """The JSON line (without newline), keys in the documented order."""
        scores = finite_rows(self.scores)
        doc = {
            "file": self.file,
            "test": self.test,
            "model": self.model,
            "example": self.example,
            "correct": self.correct,
            "tie": self.tie,
            "scores": scores,
            "texts": list(self.texts),
            "images": list(self.images),
        }
        if self.cluster:
            doc["cluster"] = self.cluster
        doc.update((key, self.said[key]) for key in SAID_KEYS if key in self.said)
        return json.dumps(doc, ensure_ascii=False, allow_nan=False)


def finite_rows(
    scores: Iterable[Iterable[float | None]],
) -> list[list[float | None]]:
    """Scores as JSON can hold them: fresh lists, a non-finite score as None."""
    return [[x if x is not None and math.isfinite(x) else None for x in r] for r in scores]


def sample_rows(results: Iterable[CapabilityResult]) -> Iterator[SampleRow]:
    """One row per example x model of ``results``, made as the writer asks for them."""
    for r in results:
        for o in r.outcomes:
            scores = tuple(tuple(row) for row in o.scores)
            yield SampleRow(
                r.file,
                r.test,
                r.model,
                o.id,
                o.correct,
                o.tie,
                scores,
                o.cluster,
                tuple(o.texts),
                tuple(o.images),
                o.said,
            )


def write_samples(path: str | Path, rows: Iterable[SampleRow]) -> None:
    """Write every row as one JSON line, streaming (a suite's rows are never one string in
    memory), atomically: a reader never sees half a file, and a write that fails or is
    interrupted leaves the previous file as it was."""
    with atomic_path(path) as temp, temp.open("w", encoding="utf-8", newline="") as handle:
        handle.writelines(row.to_json() + "\n" for row in rows)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _row(doc: Any, where: str) -> SampleRow:
    """Validate one parsed line; errors read ``FILE:LINE: what is wrong, what is expected``."""
    if not isinstance(doc, dict):
        raise ReportFormatError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    for key in ("file", "test", "model", "example"):
        if not isinstance(doc.get(key), str):
            raise ReportFormatError(f"{where}: {key!r} must be a string, got {doc.get(key)!r}")
    for key in ("correct", "tie"):
        if not isinstance(doc.get(key), bool):
            raise ReportFormatError(f"{where}: {key!r} must be true or false, got {doc.get(key)!r}")
    raw = doc.get("scores", [])
    if not isinstance(raw, list) or not all(
        isinstance(r, list) and all(x is None or _is_number(x) for x in r) for r in raw
    ):
        raise ReportFormatError(f"{where}: 'scores' must be a list of lists of numbers or null")
    scores = tuple(tuple(None if x is None else float(x) for x in r) for r in raw)
    cluster = doc.get("cluster", "")
    if not isinstance(cluster, str):
        raise ReportFormatError(f"{where}: 'cluster' must be a string, got {cluster!r}")
    shown = {}
    for key in ("texts", "images"):
        value = doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ReportFormatError(f"{where}: {key!r} must be a list of strings")
        shown[key] = tuple(value)
    said = {key: doc[key] for key in SAID_KEYS if key in doc}
    return SampleRow(
        doc["file"],
        doc["test"],
        doc["model"],
        doc["example"],
        doc["correct"],
        doc["tie"],
        scores,
        cluster,
        shown["texts"],
        shown["images"],
        said,
    )


def read_samples(path: str | Path) -> list[SampleRow]:
    """Load and validate ``samples.jsonl``; a duplicate (file, test, model, example) is an error,
    and so is a folder whose manifest says the file is another run's."""
    p = Path(path)
    check_report_folder(p.parent)
    try:
        lines = p.read_text(encoding="utf-8").split("\n")  # JSON Lines: "\n" only
    except FileNotFoundError:
        raise ReportFormatError(f"{p}: no such file, expected a samples.jsonl") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"{p}: cannot read the samples: {exc}") from None
    rows: list[SampleRow] = []
    seen: set[tuple[str, str, str, str]] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{p}:{number}"
        if json_too_deep(line) is not None:
            raise ReportFormatError(f"{where}: {TOO_DEEP}")
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportFormatError(f"{where}: invalid JSON: {exc.msg}") from None
        row = _row(doc, where)
        if (*row.key, row.example) in seen:
            raise ReportFormatError(
                f"{where}: duplicate example {row.example!r} of {row.file}::{row.test}"
                f"[{row.model}], expected one line per example x model"
            )
        seen.add((*row.key, row.example))
        rows.append(row)
    return rows


def outcomes_by_key(rows: Iterable[SampleRow]) -> dict[Key, dict[str, bool]]:
    """(file, test, model) -> {example id: correct}: what baselines and comparisons pair on."""
    out: dict[Key, dict[str, bool]] = {}
    for row in rows:
        out.setdefault(row.key, {})[row.example] = row.correct
    return out


def example_outcomes(rows: Iterable[SampleRow]) -> dict[Key, tuple[ExampleOutcome, ...]]:
    """(file, test, model) -> the results' ``outcomes`` as ``samples.jsonl`` recorded them
    (a report read back gets them again for pairing: ``merge``, ``compare``)."""
    out: dict[Key, list[ExampleOutcome]] = {}
    for row in rows:
        scores = [list(line) for line in row.scores]
        outcome = ExampleOutcome(
            row.example,
            row.correct,
            row.tie,
            scores,
            row.cluster,
            texts=list(row.texts),
            images=list(row.images),
            said=dict(row.said),
        )
        out.setdefault(row.key, []).append(outcome)
    return {key: tuple(outcomes) for key, outcomes in out.items()}
