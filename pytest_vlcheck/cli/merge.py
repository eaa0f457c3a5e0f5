"""``vlcheck merge INPUT... -o OUT``: join CI shards into what a single run writes.

Report folders (``--vl-report`` of each ``--vl-shard K/N`` job) merge into one folder:
``matrix.json`` with every result in the serial run's order (file, line, ``--vl-model``
order), ``samples.jsonl`` in the same order, the ``thumbnails/`` files (named by content, so
copied as they are), and md / csv / html rendered again from the merged document. Baseline
files (``--vl-save-baseline`` of each job) merge into one baseline. A test x model found in
two inputs is an error naming both: shards never overlap, so an overlap means a wrong input;
so are inputs of different runs (``merge_checks``). Everything is checked before anything is
written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.merge_checks import (
    MergeError,
    check_baselines,
    check_reports,
    check_samples,
    merged_run,
)
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_file, check_output_folder
from pytest_vlcheck.report.loader import ReportDocument, ReportFormatError

if TYPE_CHECKING:
    from pytest_vlcheck.results import CapabilityResult
    from pytest_vlcheck.results.run_meta import ModelMeta
    from pytest_vlcheck.results.samples import SampleRow

__all__ = ["MergeError", "add_merge_command", "merge_baselines", "merge_reports"]

Key = tuple[str, str, str]


def add_merge_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="merge the report folders (or baselines) of CI shards into one",
        description="Merge --vl-report folders of --vl-shard jobs into one report folder, or "
        "--vl-save-baseline files into one baseline. A test x model in two inputs is an error, "
        "and so are inputs of different runs: other weights, spec, precision, device or "
        "versions, a test with other content, shards of another split or a shard missing.",
        **with_examples(
            "vlcheck merge shard-1/ shard-2/ shard-3/ -o report/",
            "vlcheck merge base-1.json base-2.json -o baseline.json",
        ),
    )
    parser.add_argument(
        "inputs", type=Path, nargs="+", metavar="INPUT", help="report folders, or baseline files"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="the merged report folder (or baseline file, when merging baselines)",
    )
    parser.set_defaults(handler=_merge)


def _merge(args: argparse.Namespace) -> int:
    inputs: list[Path] = args.inputs
    try:
        missing = [path for path in inputs if not path.exists()]
        if missing:
            raise MergeError(
                f"{missing[0]}: no such file or folder; expected a report folder or a baseline file"
            )
        folders = [path.is_dir() for path in inputs]
        if all(folders):
            check_output_folder(args.output)
            written = merge_reports(inputs, args.output)
        elif not any(folders):
            check_output_file(args.output)
            written = [merge_baselines(inputs, args.output)]
        else:
            raise MergeError(
                "the inputs mix report folders and files; expected only report folders "
                "(--vl-report) or only baseline files (--vl-save-baseline)"
            )
    except (MergeError, ReportFormatError, OutputPathError) as exc:
        print(f"vlcheck merge: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def _warn(message: str) -> None:
    print(f"vlcheck merge: warning: {message}", file=sys.stderr)


def _check_disjoint(keys_by_input: list[tuple[Path, list[Key]]], what: str) -> None:
    """Raise MergeError naming both inputs when one test x model appears twice."""
    owner: dict[Key, Path] = {}
    for source, keys in keys_by_input:
        for key in keys:
            if key in owner:
                file, test, model = key
                raise MergeError(
                    f"{file}::{test}[{model}] is in both {owner[key]} and {source}; expected "
                    f"{what} of disjoint shards (each test x model in one input only)"
                )
            owner[key] = source


def merge_baselines(inputs: list[Path], output: Path) -> Path:
    """Merge baseline files into ``output`` (written atomically), as one run would save it."""
    from pytest_vlcheck.gates.baseline import Baseline

    baselines = [(path, Baseline.load(path)) for path in inputs]
    check_baselines(baselines)
    _check_disjoint([(path, b.keys()) for path, b in baselines], "baselines")
    merged = Baseline(entries=()).merge(e for _, b in baselines for e in b.entries)
    merged.dump(output)
    return output


def merge_reports(
    inputs: list[Path], output: Path, warn: Callable[[str], None] | None = None
) -> list[Path]:
    """Merge report folders into ``output``; returns the paths written. What older folders
    do not let it check goes to ``warn``."""
    from pytest_vlcheck.report import read_report, write_report
    from pytest_vlcheck.report.thumbnails import copy_thumbnails, thumbnail_names
    from pytest_vlcheck.results.manifest import new_run_id, write_manifest, writing
    from pytest_vlcheck.results.samples import SAMPLES, write_samples

    documents = []
    for folder in inputs:
        matrix = folder / "matrix.json"
        if not matrix.is_file():
            raise MergeError(f"{folder}: no matrix.json; expected a folder written by --vl-report")
        documents.append((folder, read_report(matrix)))
    warnings = check_reports(documents)  # first: a shard of another split also overlaps
    _check_disjoint([(f, [_key(r) for r in doc.results]) for f, doc in documents], "reports")
    for warning in warnings:
        (warn or _warn)(warning)
    models = _merged_models([(folder, doc.models) for folder, doc in documents])
    order = {m.name: i for i, m in enumerate(models)}
    results = sorted(
        (r for _, doc in documents for r in doc.results),
        key=lambda r: (r.file, r.line, r.test, order[r.model]),
    )
    errors = list(dict.fromkeys(e for _, doc in documents for e in doc.errors))
    samples = _merged_samples(documents, results)
    if samples is not None:
        results = _with_reference(results, samples, [m.name for m in models])
    for folder, doc in documents:
        copy_thumbnails(folder, output, thumbnail_names(doc.results))
    with writing(output):
        written = write_report(
            output, models, results, errors=errors, run_block=merged_run(documents)
        )
        if samples is not None:
            write_samples(output / SAMPLES, samples)
            written.append(output / SAMPLES)
        write_manifest(output, [path.name for path in written], new_run_id())
    return written


def _merged_samples(
    documents: list[tuple[Path, ReportDocument]], results: list[CapabilityResult]
) -> list[SampleRow] | None:
    """Every folder's ``samples.jsonl`` rows, each checked against its folder's results, in
    the merged results' order (None when the runs wrote none; some folders without one is
    an error)."""
    from pytest_vlcheck.results.samples import read_samples

    inputs = [folder for folder, _ in documents]
    with_samples = [folder for folder in inputs if (folder / "samples.jsonl").is_file()]
    if not with_samples:
        return None
    lacking = [str(folder) for folder in inputs if folder not in with_samples]
    if lacking:
        raise MergeError(
            f"{', '.join(lacking)}: no samples.jsonl, but {with_samples[0]} has one; "
            "expected every report folder from the same kind of run"
        )
    rows = []
    for folder, doc in documents:
        read = read_samples(folder / "samples.jsonl")
        check_samples(folder, read, doc.results)
        rows += read
    position = {_key(r): i for i, r in enumerate(results)}
    return sorted(rows, key=lambda row: position[row.key])


def _with_reference(
    results: list[CapabilityResult], samples: list[SampleRow], models: list[str]
) -> list[CapabilityResult]:
    """Reference-model deltas computed again over the merged run: Holm's correction runs over
    every compared test x model of the run, which no single shard saw."""
    from pytest_vlcheck.gates.reference import with_reference
    from pytest_vlcheck.results.samples import example_outcomes

    outcomes = example_outcomes(samples)
    typed = [replace(r, outcomes=outcomes.get(_key(r), ())) for r in results]
    return with_reference(typed, models)


def _key(result: CapabilityResult) -> Key:
    return (result.file, result.test, result.model)


def _merged_models(documents: list[tuple[Path, list[ModelMeta]]]) -> list[ModelMeta]:
    """Models in first-seen order (``check_reports`` made sure their specs and weights
    agree); a shard that ran none of a model's items has no fingerprint for it, so the
    first non-empty one is kept."""
    merged: dict[str, ModelMeta] = {}
    for _folder, models in documents:
        for model in models:
            first = merged.setdefault(model.name, model)
            if not first.fingerprint and model.fingerprint:
                merged[model.name] = replace(first, fingerprint=model.fingerprint)
    return list(merged.values())
