"""What ``vlcheck merge`` checks before it writes anything: inputs that do not belong to one
run are refused, naming both inputs.

One run means one set of weights and one spec per model name, one precision, device and set
of library and tool versions, one content per test, and (for shards) one split of one
selection with every job that received work present once. A folder written before
``matrix.json`` recorded what a check needs merges with a warning naming what went unchecked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.gates.baseline import OPTIONAL_CONDITIONS
from pytest_vlcheck.results.run_meta import RunBlock

if TYPE_CHECKING:
    from pytest_vlcheck.gates.baseline import Baseline
    from pytest_vlcheck.report.loader import ReportDocument
    from pytest_vlcheck.results import CapabilityResult
    from pytest_vlcheck.results.samples import SampleRow

__all__ = ["MergeError", "check_baselines", "check_reports", "check_samples", "merged_run"]

ONE_RUN = "expected the shards of one run"


class MergeError(VlcheckUserError):
    """The inputs cannot be merged: an overlap, a missing file, inputs of different runs."""


class Agreement:
    """The first value seen for each subject, with its input: a different value from another
    input is a ``MergeError`` naming both. Empty values (an older writer's) are not checked."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[Any, Path]] = {}

    def same(self, source: Path, subject: str, value: Any) -> None:
        if value in (None, ""):
            return
        if subject not in self.seen:
            self.seen[subject] = (value, source)
            return
        first, origin = self.seen[subject]
        if first != value:
            raise MergeError(
                f"{subject} is {first!r} in {origin} but {value!r} in {source}; {ONE_RUN}"
            )


def check_reports(documents: Sequence[tuple[Path, ReportDocument]]) -> list[str]:
    """Refuse report folders of different runs; return warnings for what older folders do
    not record."""
    agreement = Agreement()
    for folder, doc in documents:
        for model in doc.models:
            agreement.same(folder, f"model '{model.name}' spec", model.spec)
            agreement.same(folder, f"model '{model.name}' fingerprint", model.fingerprint)
        if doc.run is not None:
            for key, answer in doc.run.vqa_answers.items():  # a shard records its models
                agreement.same(folder, f"model '{key}' vqa answer", answer)
            # a condition written only when not its default (decode) is compared as such
            for key, value in {**OPTIONAL_CONDITIONS, **doc.run.conditions}.items():
                agreement.same(folder, f"the run's {key}", value)
        for result in doc.results:
            test = f"{result.file}::{result.test}"
            agreement.same(folder, f"test {test} content hash", result.content_hash or None)
    _check_shards([(folder, doc.run) for folder, doc in documents if doc.run is not None])
    return _unchecked(documents)


def _check_shards(runs: Sequence[tuple[Path, RunBlock]]) -> None:
    """Every input is a job of one split of one selection, each once, none missing."""
    sharded = [(folder, run.shard) for folder, run in runs if run.shard is not None]
    if not sharded:
        return
    if len(sharded) < len(runs):
        whole = next(folder for folder, run in runs if run.shard is None)
        raise MergeError(
            f"{whole} is a whole run (no --vl-shard) but {sharded[0][0]} is shard "
            f"{sharded[0][1].name}; {ONE_RUN}"
        )
    agreement = Agreement()
    jobs: dict[int, Path] = {}
    for folder, shard in sharded:
        agreement.same(folder, "the shard count (--vl-shard K/N's N)", shard.count)
        agreement.same(folder, "the sharded selection (its tests and sizes)", shard.selection)
        if shard.index in jobs:
            raise MergeError(
                f"shard {shard.name} is both {jobs[shard.index]} and {folder}; "
                "expected each shard once"
            )
        jobs[shard.index] = folder
    count, filled = sharded[0][1].count, sharded[0][1].filled
    missing = [index for index in range(1, filled + 1) if index not in jobs]
    if missing:
        names = ", ".join(f"{index}/{count}" for index in missing)
        raise MergeError(
            f"shard {names} is missing ({filled} of {count} shards ran tests); expected the "
            "report folder of every shard that ran tests"
        )


def _unchecked(documents: Sequence[tuple[Path, ReportDocument]]) -> list[str]:
    """One warning per folder that lacks the run block or the tests' content hashes."""
    warnings = []
    for folder, doc in documents:
        lacking = []
        if doc.run is None:
            lacking.append("precision, device, versions and shard plan")
        if any(not r.content_hash for r in doc.results):
            lacking.append("test contents")
        if lacking:
            warnings.append(
                f"{folder} was written by an earlier pytest-vlcheck: its {' and '.join(lacking)} "
                "could not be checked against the other inputs"
            )
    return warnings


def merged_run(documents: Sequence[tuple[Path, ReportDocument]]) -> RunBlock | None:
    """The merged report's run block: what the (agreeing) inputs record, as a whole run."""
    runs = [doc.run for _, doc in documents if doc.run is not None]
    if not runs:
        return None
    answers = {k: v for run in runs for k, v in run.vqa_answers.items()}
    return RunBlock(runs[0].conditions, None, answers)


def check_samples(
    folder: Path, rows: Sequence[SampleRow], results: Sequence[CapabilityResult]
) -> None:
    """A folder's ``samples.jsonl`` (read, so its ids are unique per test x model) holds
    exactly its results' examples: as many rows per test x model as the result's n."""
    where = folder / "samples.jsonl"
    counts = Counter(row.key for row in rows)
    expected = {(r.file, r.test, r.model): r.n for r in results}
    for key in counts.keys() | {key for key, n in expected.items() if n}:
        file, test, model = key
        if key not in expected:
            raise MergeError(
                f"{where}: rows for {file}::{test}[{model}], which its matrix.json has no "
                "result for; expected samples.jsonl written with its matrix.json"
            )
        if counts[key] != expected[key]:
            raise MergeError(
                f"{where}: {counts[key]} rows for {file}::{test}[{model}] but its result has "
                f"n={expected[key]}; expected samples.jsonl written with its matrix.json"
            )


def check_baselines(baselines: Sequence[tuple[Path, Baseline]]) -> None:
    """Refuse baselines of different runs: a model's spec, weights and conditions, the
    tool's version and each test's content agree across inputs."""
    agreement = Agreement()
    for path, baseline in baselines:
        for entry in baseline.entries:
            model = f"model '{entry.model}'"
            agreement.same(path, f"{model} spec", entry.spec)
            agreement.same(path, f"{model} fingerprint", entry.fingerprint)
            agreement.same(path, "the run's tool_version", entry.tool_version)
            for key, value in entry.conditions.items():
                agreement.same(path, f"the run's {key}", value)
            agreement.same(
                path, f"test {entry.file}::{entry.test} content hash", entry.content_hash
            )
