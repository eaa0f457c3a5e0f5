"""The report model: every fact a human-readable report shows, computed once.

``build_report`` turns the validated ``matrix.json`` rows into small frozen values (one
``Section`` per checklist test, one ``Cell`` per test x model, the deltas against a baseline
and against the run's first model, the run's errors); the terminal, Markdown, CSV and HTML
formatters only lay them out, so the four agree by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP
from pytest_vlcheck.gates.wording import gate_verdict, pvalue
from pytest_vlcheck.metrics.paired import change_mark
from pytest_vlcheck.report.loader import RunError
from pytest_vlcheck.report.matrix import Matrix, Row, build_matrix, status_counts
from pytest_vlcheck.results import STATUSES, CapabilityResult, FailureExample
from pytest_vlcheck.results.blocks import GateComparison, Prior
from pytest_vlcheck.results.run_meta import ModelMeta

__all__ = [
    "Cell",
    "Delta",
    "Kind",
    "Report",
    "Section",
    "SliceTable",
    "build_report",
]

Significance = Literal["drop", "gain", ""]
Kind = Literal["gate", "reference"]


@dataclass(frozen=True)
class Delta:
    """A change in points: against the baseline (``gate``) or the run's first model
    (``reference``). ``significance`` is ``drop``/``gain`` only when the statistics say so
    (the gate's verdict; for a reference ``change_mark``, the gate's rule: mid-p < alpha / m
    and a change of more than --vl-max-drop's default)."""

    kind: Kind
    against: str
    delta_pts: float
    p_value: float | None
    significance: Significance
    basis: str = "pass rate"
    verdict: str = ""
    """The gate's verdict in words (``gates.wording.gate_verdict``); empty for a reference."""

    @property
    def points(self) -> str:
        """Signed points, one decimal (``fmt.points``): ``-12.5``, ``+3.0``, ``0.0``."""
        return fmt.points(self.delta_pts)

    @property
    def marked(self) -> str:
        """``points`` with ``▼`` (significant drop) or ``▲`` (significant gain)."""
        return self.points + {"drop": "▼", "gain": "▲", "": ""}[self.significance]

    @property
    def describe(self) -> str:
        """One phrase: ``gate vs baseline old: regressed: dropped 12.5 pts, significant
        (...)`` or ``-3.0 pts vs reference a (Holm p 0.2)``."""
        basis = "" if self.basis == "pass rate" else f" ({self.basis})"
        if self.kind == "gate":
            return f"gate vs baseline {self.against}{basis}: {self.verdict}"
        p = "n/a" if self.p_value is None else pvalue(self.p_value)
        verdict = f", significant {self.significance}" if self.significance else ""
        return f"{self.points} pts{basis} vs reference {self.against} (Holm p {p}{verdict})"


def _gate_delta(result: CapabilityResult) -> Delta | None:
    measured = result.gate
    if not isinstance(measured, GateComparison):
        return None
    significance: Significance = (
        "drop" if measured.regressed else "gain" if measured.improved else ""
    )
    # The gate pairs per-example outcomes: its delta is on the (micro) pass rate even when
    # the threshold judges a macro average.
    basis = "pass rate" if result.judged == "pass_rate" else "micro pass rate"
    return Delta(
        "gate",
        measured.baseline_model,
        measured.delta_pts,
        measured.p_corrected,
        significance,
        basis,
        gate_verdict(measured),
    )


def _reference_delta(result: CapabilityResult, m: int) -> Delta | None:
    """Against the run's first model; marked by the gate's rule (``change_mark``) with m the
    reference comparisons of the report."""
    ref = result.reference
    if ref is None:
        return None
    significance: Significance = change_mark(  # type: ignore[assignment]
        ref.delta_pts, ref.p_value, m, alpha=DEFAULT_ALPHA, max_drop_pts=DEFAULT_MAX_DROP
    )
    return Delta("reference", ref.model, float(ref.delta_pts), ref.p_holm, significance)


@dataclass(frozen=True)
class Cell:
    """One test x model: the result and its deltas (gate first, then reference)."""

    model: str
    result: CapabilityResult
    deltas: tuple[Delta, ...]

    @property
    def rate(self) -> float | None:
        """The pass rate to print: None when nothing was measured (n = 0)."""
        return self.result.pass_rate if self.result.n > 0 else None

    @property
    def judged_text(self) -> str:
        """What a matrix cell leads with: the number the threshold judges, with the micro
        pass rate beside a macro average (``macro 58.0% (micro 61.3%)``)."""
        r = self.result
        if r.judged == "pass_rate" or r.n == 0:
            return fmt.pct(self.rate)
        judged = r.judged.removesuffix("_average")
        return f"{judged} {fmt.pct(r.judged_value)} (micro {fmt.pct(self.rate)})"

    @property
    def unscored(self) -> int:
        """Examples left unscored (``--vl-missing=skip``)."""
        return sum(self.result.unscored.values())

    @property
    def unscored_text(self) -> str:
        """``missing image: 3`` (reasons and counts), ``-`` when none."""
        return ", ".join(f"{k}: {v}" for k, v in self.result.unscored.items()) or "-"

    @property
    def ci_text(self) -> str:
        """The 95% interval, and the clustered one beside it when examples share clusters
        enough to widen it (``design_effect`` above 1)."""
        r = self.result
        if not r.n:
            return fmt.MISSING
        text = fmt.ci(r.ci_low, r.ci_high)
        if r.design_effect is not None and r.design_effect > 1:
            text += f" (clustered {fmt.ci(r.ci_low_clustered, r.ci_high_clustered)})"
        return text

    @property
    def significance(self) -> Significance:
        """A significant drop in any delta wins over a gain (what a reader must see first)."""
        kinds = {d.significance for d in self.deltas}
        return "drop" if "drop" in kinds else "gain" if "gain" in kinds else ""


@dataclass(frozen=True)
class SliceTable:
    """One tag of a test: per value, per model ``(pass_rate, passed, n)`` or None."""

    tag: str
    values: tuple[str, ...]
    cells: tuple[tuple[tuple[float | None, int, int] | None, ...], ...]

    @staticmethod
    def text(cell: tuple[float | None, int, int] | None) -> str:
        """``50.0% (5/10)`` or ``-``."""
        return "-" if cell is None else f"{fmt.pct(cell[0])} ({cell[1]}/{cell[2]})"


@dataclass(frozen=True)
class Failures:
    """The failure examples one model kept for a test."""

    model: str
    task: str
    status: str
    failing: int
    examples: tuple[FailureExample, ...]


@dataclass(frozen=True)
class Section:
    """One checklist test across the models that ran it (``cells`` in column order)."""

    anchor: str
    label: str
    capability: str
    suffix: str
    test_id: str
    task: str
    criterion: str
    chance: float | None
    chance_text: str
    """``chance X%``; ``no chance level`` for a kind that has none (invariance); else empty."""
    threshold: float | None
    cells: tuple[Cell, ...]
    metric_names: tuple[str, ...]
    slices: tuple[SliceTable, ...]
    failures: tuple[Failures, ...]

    @property
    def models(self) -> list[str]:
        return [c.model for c in self.cells]

    def cell(self, model: str) -> Cell | None:
        return next((c for c in self.cells if c.model == model), None)

    @property
    def priors(self) -> list[tuple[str, Prior]]:
        """(model, prior block) for results measured with a ``--vl-prior`` (or a
        ``hard_threshold`` that could not be applied)."""
        return [(c.model, c.result.prior) for c in self.cells if c.result.prior]

    @property
    def messages(self) -> list[tuple[str, str]]:
        """(model, message) for results that say why they have no measurement."""
        return [(c.model, c.result.message) for c in self.cells if c.result.message]

    def metric(self, name: str) -> list[float | None]:
        """One metric across the section's models (None where a model lacks it)."""
        return [c.result.metrics.get(name) for c in self.cells]


@dataclass(frozen=True)
class Report:
    """Everything the formatters show; ``matrix`` (the results as rows) feeds the SVG charts."""

    models: list[ModelMeta]
    sections: tuple[Section, ...]
    counts: dict[str, dict[str, int]]
    errors: tuple[RunError, ...]
    results: tuple[CapabilityResult, ...]
    matrix: Matrix

    @property
    def model_names(self) -> list[str]:
        return [m.name for m in self.models]

    @property
    def status_columns(self) -> list[str]:
        """The statuses the models table counts: the four every run has, and ``xfailed`` /
        ``xpassed`` when a known failure gave one."""
        usual = ("passed", "failed", "error", "skipped")
        return [s for s in STATUSES if s in usual or any(c.get(s) for c in self.counts.values())]

    @property
    def result_errors(self) -> list[tuple[Section, Cell]]:
        """Test x model results that errored, with their message (load failures and such)."""
        return [(s, c) for s in self.sections for c in s.cells if c.result.status == "error"]

    @property
    def unscored(self) -> list[tuple[Section, Cell]]:
        """Test x model results with examples left unscored (``--vl-missing=skip``)."""
        return [(s, c) for s in self.sections for c in s.cells if c.unscored]

    @property
    def deltas(self) -> list[Delta]:
        return [d for s in self.sections for c in s.cells for d in c.deltas]


def _slice_tables(results: list[CapabilityResult]) -> tuple[SliceTable, ...]:
    """A table per tag with two values or more: a tag every example shares says nothing
    the overall rate does not (a directional test's ``change: text``)."""
    tags = list(dict.fromkeys(t for r in results for t in r.slices))
    tables = []
    for tag in tags:
        values = tuple(dict.fromkeys(v for r in results for v in r.slices.get(tag, {})))
        if len(values) < 2:
            continue
        cells = tuple(
            tuple(_slice_cell(r.slices.get(tag, {}).get(v)) for r in results) for v in values
        )
        tables.append(SliceTable(tag, values, cells))
    return tuple(tables) + _group_slice_tables(results)


def _group_slice_tables(results: list[CapabilityResult]) -> tuple[SliceTable, ...]:
    """Per ``all_of`` tag and slice tag, the share of groups right in every member (MMVP's
    pair accuracy per pattern): ``(rate, passed, groups)`` cells; ``mixed`` gathers groups
    whose members differ."""
    groups = list(dict.fromkeys(g for r in results for g in r.all_of_slices))
    tables = []
    for group in groups:
        tags = list(dict.fromkeys(t for r in results for t in r.all_of_slices.get(group, {})))
        for tag in tags:
            cells_of = [r.all_of_slices.get(group, {}).get(tag, {}) for r in results]
            values = tuple(dict.fromkeys(v for cells in cells_of for v in cells))
            rows = tuple(tuple(_group_cell(cells.get(v)) for cells in cells_of) for v in values)
            tables.append(SliceTable(f"{tag}, {group} all right", values, rows))
    return tuple(tables)


def _group_cell(raw: Mapping[str, Any] | None) -> tuple[float | None, int, int] | None:
    return None if raw is None else (raw["rate"], raw["passed"], raw["groups"])


def _slice_cell(raw: Mapping[str, Any] | None) -> tuple[float | None, int, int] | None:
    return None if raw is None else (raw["pass_rate"], raw["passed"], raw["n"])


def _section(index: int, row: Row, names: list[str], m: int) -> Section:
    results = [row.cells[n] for n in names if n in row.cells]
    cells = tuple(
        Cell(r.model, r, tuple(d for d in (_gate_delta(r), _reference_delta(r, m)) if d))
        for r in results
    )
    first = results[0]
    return Section(
        anchor=f"t{index + 1}",
        label=row.label,
        capability=row.capability,
        suffix=row.suffix,
        test_id=row.test_id,
        task=first.task,
        criterion=first.criterion,
        chance=row.shared("chance"),
        chance_text=_chance_text(row.shared("chance"), results),
        threshold=row.shared("threshold"),
        cells=cells,
        metric_names=tuple(dict.fromkeys(k for r in results for k in r.metrics)),
        slices=_slice_tables(results),
        failures=tuple(
            Failures(r.model, r.task, r.status, r.n - r.passed, tuple(r.failures))
            for r in results
            if r.failures
        ),
    )


def _chance_text(chance: float | None, results: list[CapabilityResult]) -> str:
    if chance is not None:
        return f"chance {fmt.pct(chance)}" + _blind_text(results)
    measured = [r for r in results if r.n]
    if measured and all(r.chance is None for r in measured):
        return "no chance level"
    return ""


def _blind_text(results: list[CapabilityResult]) -> str:
    """``; 7.6% of examples only reorder the caption's words`` when some do: there a
    word-order-blind model can only tie (it passes at most the rest unless ties go to it)."""
    shares = [r.reordered_share for r in results if r.n and r.reordered_share]
    if not shares:
        return ""
    return (
        f"; {fmt.pct(max(shares))} of examples have a negative made of the true text's words "
        "(a word-order-blind model can only tie there)"
    )


def build_report(
    models: Sequence[ModelMeta],
    results: Sequence[CapabilityResult],
    errors: Sequence[RunError] = (),
) -> Report:
    """The report model of a run's results (a live run's, or ``matrix.json``'s read back)."""
    matrix = build_matrix(models, results)
    names = matrix.model_names
    m = sum(1 for r in results if r.reference and r.reference.p_value is not None)
    return Report(
        models=list(models),
        sections=tuple(_section(i, row, names, m) for i, row in enumerate(matrix.rows)),
        counts=status_counts(models, results),
        errors=tuple(errors),
        results=tuple(results),
        matrix=matrix,
    )
