"""Baseline files: the memory between runs that regression gates compare against.

Format, load, merge, prune, and the entries a run saves (``baseline_entries``,
``save_baseline``).

A baseline holds, per (file, test, model), the verdict numbers, the per-example outcomes by
example id (and, since issue 41, each example's scores and cluster, optional: older files
load without them), what was measured (spec, fingerprint, test content hash) and how (run
conditions, tool version, git commit). ``file`` is relative to pytest's rootdir, so keys
match across checkouts and machines. Format: ``{"vlcheck_baseline": 1, "tool_version",
"entries": [...]}``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_vlcheck import __version__
from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.results import MEASURED, CapabilityResult
from pytest_vlcheck.results.json_checks import (
    JsonChecker,
    ReportFormatError,
    is_int,
    is_number,
    read_json,
)
from pytest_vlcheck.results.samples import finite_rows

__all__ = [
    "BASELINE_VERSION",
    "CONDITION_KEYS",
    "NUMBER_KEYS",
    "OPTIONAL_CONDITIONS",
    "Baseline",
    "BaselineEntry",
    "BaselineError",
    "baseline_entries",
    "git_commit",
    "make_entry",
    "save_baseline",
    "with_defaults",
]

BASELINE_VERSION = 1
CONDITION_KEYS = (
    "precision",
    "device",
    "batch_size",
    "vqa",
    "torch",
    "open_clip",
    "transformers",
)
OPTIONAL_CONDITIONS = {"decode": "cpu"}
"""Conditions written only when they differ from their default (``decode: gpu``): absent
means the default, so entries saved before the key existed still compare equal."""
NUMBER_KEYS = ("n", "passed", "pass_rate", "ci_low", "ci_high", "threshold")
_TEXT_KEYS = ("file", "test", "model", "capability", "task", "spec", "content_hash")
_OPTIONAL_TEXT_KEYS = ("fingerprint", "tool_version", "git_commit")

Key = tuple[str, str, str]
Grid = list[list[float | None]]
"""An example's scores: ``grid[i][j]`` = s(image i, text j), None where not finite."""


class BaselineError(ReportFormatError):
    """A baseline file is missing, malformed or of another format version."""


@dataclass(frozen=True)
class BaselineEntry:
    """One test x model as measured by the run that saved the baseline."""

    file: str
    test: str
    model: str
    capability: str
    task: str
    spec: str
    fingerprint: str | None
    content_hash: str
    tool_version: str | None
    git_commit: str | None
    conditions: Mapping[str, Any] = field(default_factory=dict)
    numbers: Mapping[str, Any] = field(default_factory=dict)
    outcomes: Mapping[str, bool] = field(default_factory=dict)
    scores: Mapping[str, Grid] = field(default_factory=dict)
    """Example id -> its scores (``samples.jsonl``'s ``scores``), so a gate can show what
    an example that flipped scored before; empty in baselines saved before the field."""
    clusters: Mapping[str, str] = field(default_factory=dict)
    """Example id -> its cluster (``samples.jsonl``'s ``cluster``), for examples that have
    one, so ``vlcheck compare`` tests two baselines as the gate would; may be empty."""

    @property
    def key(self) -> Key:
        return (self.file, self.test, self.model)

    @property
    def pass_rate(self) -> float | None:
        rate = self.numbers.get("pass_rate")
        return None if rate is None else float(rate)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this entry (outcomes sorted by id for stable diffs)."""
        doc: dict[str, Any] = {k: getattr(self, k) for k in (*_TEXT_KEYS, *_OPTIONAL_TEXT_KEYS)}
        doc["conditions"] = {k: self.conditions.get(k) for k in CONDITION_KEYS}
        doc["conditions"].update(
            {k: v for k, v in self.conditions.items() if OPTIONAL_CONDITIONS.get(k, v) != v}
        )
        doc["numbers"] = {k: self.numbers.get(k) for k in NUMBER_KEYS}
        doc["outcomes"] = dict(sorted(self.outcomes.items()))
        if self.scores:
            doc["scores"] = {k: finite_rows(v) for k, v in sorted(self.scores.items())}
        if self.clusters:
            doc["clusters"] = dict(sorted(self.clusters.items()))
        return doc


def _entry(c: JsonChecker, raw: Any, where: str) -> BaselineEntry:
    """One entry, validated whole; past its key, messages name it (``entries[3] (a.yaml::
    color [clip])``) so a reader finds it without counting."""
    obj = c.mapping(raw, where)
    texts = {k: c.text(obj, k, where) for k in _TEXT_KEYS}
    where = f"{where} ({texts['file']}::{texts['test']} [{texts['model']}])"
    optional: dict[str, Any] = {}  # by field name: a string or None, checked below
    for key in _OPTIONAL_TEXT_KEYS:
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            raise c.fail(f"{where}.{key}", f"expected a string or null, got {v!r}")
        optional[key] = v
    raw_conditions = c.mapping(obj.get("conditions", {}), f"{where}.conditions")
    conditions = with_defaults(raw_conditions)
    numbers = _numbers(c, obj.get("numbers"), f"{where}.numbers")
    outcomes = _outcomes(c, obj.get("outcomes", {}), numbers, f"{where}.outcomes")
    scores = _scores(c, obj.get("scores", {}), outcomes, f"{where}.scores")
    clusters = _clusters(c, obj.get("clusters", {}), outcomes, f"{where}.clusters")
    return BaselineEntry(
        **texts,
        **optional,
        conditions=conditions,
        numbers=numbers,
        outcomes=outcomes,
        scores=scores,
        clusters=clusters,
    )


def _clusters(c: JsonChecker, raw: Any, outcomes: Mapping[str, bool], where: str) -> dict[str, str]:
    """Example id -> cluster name, for ids among the outcomes."""
    clusters = dict(c.mapping(raw, where))
    for example, cluster in clusters.items():
        if example not in outcomes:
            raise c.fail(f"{where}[{example!r}]", "expected an example id of 'outcomes'")
        if not isinstance(cluster, str):
            raise c.fail(f"{where}[{example!r}]", f"expected a string, got {cluster!r}")
    return clusters


def _scores(c: JsonChecker, raw: Any, outcomes: Mapping[str, bool], where: str) -> dict[str, Grid]:
    """Example id -> a list of rows of numbers or nulls, for ids among the outcomes."""
    scores: dict[str, Grid] = {}
    for example, grid in c.mapping(raw, where).items():
        if example not in outcomes:
            raise c.fail(f"{where}[{example!r}]", "expected an example id of 'outcomes'")
        rows = c.listing(grid, f"{where}[{example!r}]")
        if not all(isinstance(r, list) and all(x is None or is_number(x) for x in r) for r in rows):
            raise c.fail(f"{where}[{example!r}]", "expected a list of lists of numbers or null")
        scores[example] = [[None if x is None else float(x) for x in r] for r in rows]
    return scores


_RATE_KEYS = ("pass_rate", "ci_low", "ci_high", "threshold")


def _numbers(c: JsonChecker, raw: Any, where: str) -> dict[str, Any]:
    """``n`` and ``passed`` whole (passed <= n); the rates in [0, 1], ``pass_rate`` given
    and equal to passed / n: the gate compares with it."""
    raw_numbers = c.mapping(raw, where)
    numbers: dict[str, Any] = {}
    for key in NUMBER_KEYS:
        if key not in raw_numbers:
            raise c.fail(where, f"missing key {key!r}, expected a number")
        value = raw_numbers[key]
        if key in _RATE_KEYS:
            if value is not None and (not is_number(value) or not 0 <= value <= 1):
                raise c.fail(f"{where}.{key}", f"expected a number from 0 to 1, got {value!r}")
            numbers[key] = value
        else:
            numbers[key] = c.integer(value, f"{where}.{key}")
    n, passed, rate = numbers["n"], numbers["passed"], numbers["pass_rate"]
    if passed > n:
        raise c.fail(where, f"passed is {passed} but n is {n}; expected passed <= n")
    if n and (rate is None or abs(rate - passed / n) > 1e-9):
        raise c.fail(f"{where}.pass_rate", f"is {rate!r}; expected passed / n = {passed}/{n}")
    return numbers


def _outcomes(c: JsonChecker, raw: Any, numbers: Mapping[str, Any], where: str) -> dict[str, bool]:
    """Example id -> correct, each id once (``JsonChecker.mapping`` refuses a repeated key);
    when present, one per example counted in ``n`` and true for ``passed`` of them."""
    outcomes = c.mapping(raw, where)
    for example, correct in outcomes.items():
        if not isinstance(correct, bool):
            raise c.fail(f"{where}[{example!r}]", f"expected true or false, got {correct!r}")
    right = sum(outcomes.values())
    if outcomes and (len(outcomes), right) != (numbers["n"], numbers["passed"]):
        raise c.fail(
            where,
            f"{len(outcomes)} outcomes, {right} true; expected n = {numbers['n']} outcomes, "
            f"passed = {numbers['passed']} true",
        )
    return dict(outcomes)


@dataclass(frozen=True)
class Baseline:
    """The entries of a baseline file, one per (file, test, model), sorted by that key."""

    entries: tuple[BaselineEntry, ...] = ()
    tool_version: str = __version__

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(sorted(self.entries, key=lambda e: e.key)))

    def keys(self) -> list[Key]:
        return [e.key for e in self.entries]

    def to_json(self) -> str:
        doc = {
            "vlcheck_baseline": BASELINE_VERSION,
            "tool_version": self.tool_version,
            "entries": [e.to_dict() for e in self.entries],
        }
        return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"

    def dump(self, path: str | Path) -> None:
        """Write atomically: an interrupted write leaves the previous baseline intact."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        """Read and validate; raises BaselineError ``FILE: where: what, expected what``."""
        doc = read_json(path, "a vlcheck baseline", BaselineError)
        return cls.from_document(doc, str(path))

    @classmethod
    def from_document(cls, doc: Any, source: str) -> Baseline:
        """Validate a parsed baseline document (``source`` names it in errors)."""
        c = JsonChecker(source, BaselineError)
        if not isinstance(doc, dict) or "vlcheck_baseline" not in doc:
            raise BaselineError(
                f'{source}: not a vlcheck baseline: expected a JSON object with "vlcheck_baseline"'
                f": {BASELINE_VERSION}"
            )
        _check_version(doc["vlcheck_baseline"], source)
        tool_version = doc.get("tool_version", "")
        if not isinstance(tool_version, str):
            raise c.fail("tool_version", f"expected a string, got {tool_version!r}")
        raw = c.listing(doc.get("entries"), "entries")
        entries = [_entry(c, e, f"entries[{i}]") for i, e in enumerate(raw)]
        seen: set[Key] = set()
        for i, e in enumerate(entries):
            if e.key in seen:
                raise c.fail(f"entries[{i}]", f"duplicate entry for {e.file}::{e.test}[{e.model}]")
            seen.add(e.key)
        return cls(tuple(entries), tool_version)

    def merge(self, new_entries: Iterable[BaselineEntry]) -> Baseline:
        """New entries replace those with the same key; every other entry is kept."""
        by_key = {e.key: e for e in self.entries}
        by_key.update((e.key, e) for e in new_entries)
        return replace(self, entries=tuple(by_key.values()), tool_version=__version__)

    def entry_for(
        self, file: str, test: str, model: str, baseline_model: str | None = None
    ) -> BaselineEntry | None:
        """The reference entry for one test x model of a run, or None.

        ``baseline_model`` picks a model by name. Otherwise, when the baseline holds one model
        for the test it is the reference for every model of the run (a new checkpoint against
        the last one, whose names differ); with several, the model of the same name.
        """
        candidates = [e for e in self.entries if e.file == file and e.test == test]
        wanted = baseline_model
        if wanted is None:
            if len(candidates) == 1:
                return candidates[0]
            wanted = model
        return next((e for e in candidates if e.model == wanted), None)

    def stale(self, existing_tests: Iterable[tuple[str, str]]) -> list[BaselineEntry]:
        """Entries whose (file, test) is not among ``existing_tests`` (deleted or renamed)."""
        existing = set(existing_tests)
        return [e for e in self.entries if (e.file, e.test) not in existing]

    def prune(self, existing_tests: Iterable[tuple[str, str]]) -> Baseline:
        """A copy without the stale entries."""
        drop = {e.key for e in self.stale(existing_tests)}
        return replace(self, entries=tuple(e for e in self.entries if e.key not in drop))


def _check_version(version: Any, source: str) -> None:
    """The format this vlcheck writes, told apart from a newer one (upgrade) and from
    anything else (not a format we know)."""
    if is_int(version) and version > BASELINE_VERSION:
        raise BaselineError(
            f"{source}: baseline format {version} was written by a newer pytest-vlcheck; this "
            f"one reads format {BASELINE_VERSION}: upgrade pytest-vlcheck, or save a new "
            "baseline with this one"
        )
    if not is_int(version) or version != BASELINE_VERSION:
        raise BaselineError(
            f"{source}: unsupported baseline format version {version!r}; expected "
            f'"vlcheck_baseline": {BASELINE_VERSION} (save a new baseline with this '
            "pytest-vlcheck)"
        )


def make_entry(
    result: Mapping[str, Any],
    outcomes: Mapping[str, bool],
    *,
    spec: str,
    fingerprint: str | None,
    content_hash: str,
    conditions: Mapping[str, Any],
    git_commit: str | None = None,
    scores: Mapping[str, Grid] | None = None,
    clusters: Mapping[str, str] | None = None,
) -> BaselineEntry:
    """An entry from a matrix row (``matrix.json`` result fields), its example outcomes and,
    optionally, their scores and clusters."""
    return BaselineEntry(
        file=result["file"],
        test=result["test"],
        model=result["model"],
        capability=result["capability"],
        task=result["task"],
        spec=spec,
        fingerprint=fingerprint,
        content_hash=content_hash,
        tool_version=__version__,
        git_commit=git_commit,
        conditions=with_defaults(conditions),
        numbers={k: result[k] for k in NUMBER_KEYS},
        outcomes=dict(outcomes),
        scores=dict(scores or {}),
        clusters=dict(clusters or {}),
    )


def with_defaults(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """Every condition key of ``conditions``, an optional one absent taking its default."""
    known = {k: conditions.get(k) for k in CONDITION_KEYS}
    return known | {k: conditions.get(k, default) for k, default in OPTIONAL_CONDITIONS.items()}


def git_commit(directory: str | Path) -> str | None:
    """The commit checked out in ``directory``, or None outside a git checkout (or no git)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None


def baseline_entries(
    results: Iterable[CapabilityResult],
    specs: Mapping[str, str],
    conditions: Mapping[str, Any],
    commit: str | None,
) -> list[BaselineEntry]:
    """Entries for every measured result (an errored or skipped test keeps its old entry)."""
    return [
        make_entry(
            r.to_json(),
            {o.id: o.correct for o in r.outcomes},
            spec=specs.get(r.model, ""),
            fingerprint=r.fingerprint or None,
            content_hash=r.content_hash,
            conditions=conditions,
            git_commit=commit,
            scores={o.id: o.scores for o in r.outcomes},
            clusters={o.id: o.cluster for o in r.outcomes if o.cluster},
        )
        for r in results
        if r.status in MEASURED and r.n > 0
    ]


def save_baseline(path: Path, entries: list[BaselineEntry]) -> Baseline:
    """Merge ``entries`` into the baseline at ``path`` (created when absent), atomically.

    With no entries (nothing was measured: every test errored or was skipped) an existing
    file is left byte-identical, not rewritten in this version's layout."""
    existing = Baseline.load(path) if path.exists() else Baseline(entries=())
    if not entries and path.exists():
        return existing
    merged = existing.merge(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    merged.dump(path)
    return merged
