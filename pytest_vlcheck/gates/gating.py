"""Memory between runs, pytest-free: gate a result against its baseline entry, and turn a
run's results into ``samples.jsonl`` rows and baseline entries.

The statistics live in ``metrics.paired`` and ``report.gate``; this module decides which
entry a result meets, counts the items gated (m, over the whole selection, so a serial run,
``-n N`` and CI shards agree), and records run conditions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_vlcheck.gates.baseline import Baseline, BaselineEntry, make_entry
from pytest_vlcheck.gates.decision import gate
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.torch_utils import computed_precision
from pytest_vlcheck.report.samples import SampleRow
from pytest_vlcheck.results import CapabilityResult

DEFAULT_MAX_DROP = 2.0
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class GateSettings:
    """``--vl-baseline`` and its companions."""

    baseline: Baseline | None = None
    baseline_model: str | None = None
    max_drop_pts: float = DEFAULT_MAX_DROP
    alpha: float = DEFAULT_ALPHA
    gate_only: bool = False


def run_conditions(options: ModelOptions) -> dict[str, Any]:
    """How a run measured: the precision computed in (fp16 on the CPU is fp32), the device
    asked for, batch size and library versions (read from the installed metadata, so
    nothing heavy is imported)."""
    conditions: dict[str, Any] = {
        "precision": computed_precision(options.precision, options.device),
        "device": options.device,
        "batch_size": "auto" if options.auto_batch else options.batch_size,
    }
    for name, dist in (("torch", "torch"), ("open_clip", "open_clip_torch"), ("transformers",) * 2):
        try:
            conditions[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            conditions[name] = None
    return conditions


def entry_of(settings: GateSettings, file: str, test: str, model: str) -> BaselineEntry | None:
    """The baseline entry a test x model is gated against, if any."""
    if settings.baseline is None:
        return None
    return settings.baseline.entry_for(file, test, model, settings.baseline_model)


def apply_gate(
    result: CapabilityResult,
    settings: GateSettings,
    *,
    m: int,
    conditions: Mapping[str, Any],
) -> CapabilityResult:
    """The result with its gate (or a warning when the baseline has no entry for it).

    A significant drop beyond ``max_drop_pts`` fails the item; with ``gate_only`` only such
    a drop fails it, and the threshold verdict is reported alone.
    """
    if settings.baseline is None or result.n == 0:
        return result
    entry = entry_of(settings, result.file, result.test, result.model)
    if entry is None:
        return dataclasses.replace(result, gate={"warning": "no baseline entry for this test"})
    outcomes = {o.id: o.correct for o in result.outcomes}
    measured = gate(
        outcomes,
        result.pass_rate or 0.0,
        entry,
        m=max(m, 1),
        alpha=settings.alpha,
        max_drop_pts=settings.max_drop_pts,
        content_hash=result.content_hash,
        conditions=conditions,
    )
    threshold_ok = result.status == "passed"
    passed = not measured.regressed and (settings.gate_only or threshold_ok)
    return dataclasses.replace(
        result,
        status="passed" if passed else "failed",
        gate=dataclasses.asdict(measured) | {"baseline_model": entry.model},
    )


def unmatched_warning(
    results: Iterable[CapabilityResult], settings: GateSettings, rootdir: Path
) -> str | None:
    """What the terminal says when ``--vl-baseline`` has no entry for some measured items: a
    gate that finds no entry checks nothing, which must not pass a CI job silently. Entries
    are keyed by paths relative to the rootdir, so the likely causes are named."""
    if settings.baseline is None:
        return None
    measured = [r for r in results if r.n > 0 and r.status != "error"]
    missing = [r for r in measured if r.gate is not None and "warning" in r.gate]
    if not missing:
        return None
    examples = ", ".join(f"{r.file}::{r.test} [{r.model}]" for r in missing[:3])
    files = sorted({e.file for e in settings.baseline.entries} - {r.file for r in measured})
    hint = (
        f"; it has entries for {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}, and "
        f"entry paths are relative to the rootdir ({rootdir}): run from the folder the "
        "baseline was saved in, or set the same rootdir"
        if files
        else ""
    )
    return (
        f"vlcheck: WARNING: no gate for {len(missing)} of {len(measured)} items: the baseline "
        f"has no entry for {examples}{' ...' if len(missing) > 3 else ''}{hint}"
    )


def sample_rows(results: Iterable[CapabilityResult]) -> list[SampleRow]:
    """One ``samples.jsonl`` row per example x model."""
    return [
        SampleRow(
            r.file,
            r.test,
            r.model,
            o.id,
            o.correct,
            o.tie,
            tuple(tuple(row) for row in o.scores),
        )
        for r in results
        for o in r.outcomes
    ]


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
        )
        for r in results
        if r.status in ("passed", "failed") and r.n > 0
    ]


def save_baseline(path: Path, entries: list[BaselineEntry]) -> Baseline:
    """Merge ``entries`` into the baseline at ``path`` (created when absent), atomically."""
    existing = Baseline.load(path) if path.exists() else Baseline(entries=())
    merged = existing.merge(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    merged.dump(path)
    return merged
