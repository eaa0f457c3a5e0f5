"""One test x model outcome: the typed value items, the session, xdist and reports share.

``CapabilityResult.to_json`` is the row ``matrix.json`` publishes (design-brief contract) and
``from_json`` validates such a row (the report loader uses it, so a report read back is the
same value a live run produced). Per-example outcomes travel beside the row for
``samples.jsonl`` and baselines, never inside ``matrix.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_vlcheck.results.blocks import (
    Gate,
    Prior,
    ReferenceDelta,
    gate_from_json,
    prior_from_json,
)
from pytest_vlcheck.results.json_checks import JsonChecker

Status = Literal["passed", "failed", "skipped", "error", "xfailed", "xpassed"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
MEASURED: tuple[Status, ...] = ("passed", "failed", "xfailed", "xpassed")
"""The statuses of a result with a measurement (``xfailed``/``xpassed``: a known failure
that failed or passed its threshold, pytest's words)."""


REPORTED_FIELDS = (
    "file",
    "test",
    "capability",
    "task",
    "model",
    "status",
    "criterion",
    "n",
    "passed",
    "pass_rate",
    "ci_low",
    "ci_high",
    "ci_low_clustered",
    "ci_high_clustered",
    "design_effect",
    "threshold",
    "chance",
    "ties",
    "reordered_share",
)
"""The result's scalar fields that every flat output reports, in this order: the JUnit
properties (``vlcheck_<field>``) and the leading columns of ``matrix.csv``. A new one goes
here (and in ``docs/contract-changes.md``)."""


class ResultFormatError(ValueError):
    """A result row that does not fit the contract; the message names the field."""


@dataclass(frozen=True)
class FailureExample:
    """A failing example as the report shows it: the score of every image x text it used.

    ``scores[i][j]`` is s(images[i], texts[j]); the task kind says which pairings are true.
    ``thumbnails`` names one JPEG per image under ``REPORT_DIR/thumbnails/`` (empty without a
    report folder or when an image could not be loaded), so ``matrix.json`` stays free of pixels.
    """

    id: str
    images: list[str]
    texts: list[str]
    scores: list[list[float | None]]
    detail: str
    thumbnails: list[str] = field(default_factory=list)
    said: dict[str, Any] = field(default_factory=dict)
    """A generative kind's prompt(s), output(s) and extracted answer (``tasks.asking``)."""

    def to_json(self) -> dict[str, Any]:
        """The report's copy (fresh lists, so a reader that edits it leaves the result)."""
        return {
            "id": self.id,
            "images": list(self.images),
            "texts": list(self.texts),
            "scores": [list(row) for row in self.scores],
            "detail": self.detail,
            "thumbnails": list(self.thumbnails),
            "said": dict(self.said),
        }


@dataclass(frozen=True)
class ExampleOutcome:
    """One example's verdict: what ``samples.jsonl``, baselines and gates compare.
    ``cluster`` is what it shares with other examples (its image ...; the clustered gate)."""

    id: str
    correct: bool
    tie: bool
    scores: list[list[float | None]]  # None: a NaN score read back from samples.jsonl
    cluster: str = ""
    texts: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    """The example's texts and images as the checklist wrote them (``ImageRef.describe``)."""
    said: dict[str, Any] = field(default_factory=dict)
    """A generative kind's prompt(s), output(s) and extracted answer (``tasks.asking``)."""

    def to_json(self) -> dict[str, Any]:
        """The xdist transport's copy of the outcome."""
        return {
            "id": self.id,
            "correct": self.correct,
            "tie": self.tie,
            "scores": [list(row) for row in self.scores],
            "cluster": self.cluster,
            "texts": list(self.texts),
            "images": list(self.images),
            "said": dict(self.said),
        }


@dataclass(frozen=True)
class CapabilityResult:
    """Everything measured for one checklist test on one model.

    ``metrics`` holds task-specific numbers (e.g. ``text_score``, ``positive_accuracy``);
    ``slices`` maps a tag name to its values to ``{"n", "passed", "pass_rate"}``;
    ``unscored`` counts examples that could not be scored (missing images), with reasons;
    ``ties`` counts examples an exact tie decided (under the test's ``ties:`` rule);
    ``judged`` names the number the threshold judged (``pass_rate``, or ``macro_average``
    from ``metrics``).
    ``ci_low_clustered``/``ci_high_clustered`` are the Wilson interval at n / ``design_effect``
    over ``clusters`` clusters (``metrics.clustered``; the plain interval when every cluster
    is one example); ``all_of_slices`` maps an ``all_of`` tag to its group rates per slice
    (``{tag: {slice tag: {value: {groups, passed, rate}}}}``, ``mixed`` for a group whose
    members differ); ``reordered_share`` is the share of examples with a competing text made
    of the true text's words (a word-order-blind model can only tie there; None without a
    choice among texts).
    ``criterion`` is a group test's pass criterion; ``score_kind`` says whether the decisive
    scores were similarities or match probabilities; ``message`` says why an errored or
    skipped test has no measurement; ``known_failure`` is the test's reason for expecting
    this model to fail (``known_failures``: pytest's strict xfail); ``gate`` holds the
    comparison with a baseline entry (or a warning that there is none) when the run was
    gated; ``prior`` holds the linguistic-prior block (``priors.evaluation.prior_block``;
    README's matrix.json section) when the run had ``--vl-prior`` or the test a
    ``hard_threshold``; ``reference`` holds the paired comparison with the run's first model
    (``pytest_vlcheck.gates.reference``) for every other model of a run with several (the
    block types are in ``results.blocks``).
    ``content_hash`` (the test's YAML, which ``vlcheck merge`` checks shards agree on) is in
    ``matrix.json``; ``fingerprint`` (the model's weights, in the models list) and
    ``outcomes`` (in ``samples.jsonl``) travel with the result but stay out of its row.
    """

    file: str
    test: str
    capability: str
    task: str
    model: str
    n: int
    passed: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float | None
    chance: float | None
    status: Status
    line: int = 0
    criterion: str = ""
    score_kind: str = "similarity"
    ties: int = 0
    judged: str = "pass_rate"
    metrics: dict[str, float | None] = field(default_factory=dict)
    slices: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    failures: list[FailureExample] = field(default_factory=list)
    unscored: dict[str, int] = field(default_factory=dict)
    message: str = ""
    known_failure: str = ""
    gate: Gate | None = None
    prior: Prior | None = None
    reference: ReferenceDelta | None = None
    ci_low_clustered: float | None = None
    ci_high_clustered: float | None = None
    clusters: int = 0
    design_effect: float | None = None
    all_of_slices: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    reordered_share: float | None = None
    fingerprint: str = field(default="", compare=False)
    content_hash: str = field(default="", compare=False)
    outcomes: tuple[ExampleOutcome, ...] = field(default=(), compare=False, repr=False)

    @property
    def judged_value(self) -> float | None:
        """The number the threshold judges: the pass rate, or the metric ``judged`` names."""
        return self.pass_rate if self.judged == "pass_rate" else self.metrics.get(self.judged)

    @property
    def threshold_met(self) -> bool | None:
        """Whether the judged number reached the threshold (None: nothing was measured). Its
        own field because a gate (``--vl-gate-only``) or a known failure can make the item's
        status say something else."""
        value = self.judged_value
        if self.n == 0 or self.status in ("error", "skipped") or self.threshold is None:
            return None
        return value is not None and value >= self.threshold

    def to_json(self, *, with_outcomes: bool = False) -> dict[str, Any]:
        """The ``matrix.json`` row (plus the outcomes, for the xdist transport).

        Written field by field, never through ``dataclasses.asdict``: that would deep-copy
        every per-example outcome (thousands per test) for each row a report builds, only
        to drop them again. The key order is the published one; a new field gets its line
        here and in ``_parse_result``."""
        row: dict[str, Any] = {
            "file": self.file,
            "test": self.test,
            "capability": self.capability,
            "task": self.task,
            "model": self.model,
            "n": self.n,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "threshold": self.threshold,
            "chance": self.chance,
            "status": self.status,
            "line": self.line,
            "criterion": self.criterion,
            "score_kind": self.score_kind,
            "ties": self.ties,
            "judged": self.judged,
            "metrics": dict(self.metrics),
            "slices": {
                tag: {value: dict(cell) for value, cell in cells.items()}
                for tag, cells in self.slices.items()
            },
            "failures": [failure.to_json() for failure in self.failures],
            "unscored": dict(self.unscored),
            "message": self.message,
        }
        if self.known_failure:
            row["known_failure"] = self.known_failure
        for key, block in (
            ("gate", self.gate),
            ("prior", self.prior),
            ("reference", self.reference),
        ):
            if block is not None:
                row[key] = block.to_json()
        row.update(
            ci_low_clustered=self.ci_low_clustered,
            ci_high_clustered=self.ci_high_clustered,
            clusters=self.clusters,
            design_effect=self.design_effect,
            all_of_slices={
                group: {
                    tag: {value: dict(cell) for value, cell in cells.items()}
                    for tag, cells in tags.items()
                }
                for group, tags in self.all_of_slices.items()
            },
            reordered_share=self.reordered_share,
        )
        if self.content_hash:
            row["content_hash"] = self.content_hash
        row["threshold_met"] = self.threshold_met
        if with_outcomes:
            row["fingerprint"] = self.fingerprint
            row["outcomes"] = tuple(outcome.to_json() for outcome in self.outcomes)
        return row

    @classmethod
    def from_json(cls, raw: Any, where: str = "result") -> CapabilityResult:
        """Validate a row (unknown keys are ignored: a newer writer may add fields)."""
        return _parse_result(JsonChecker("", ResultFormatError), raw, where)


def _parse_result(c: JsonChecker, raw: Any, where: str) -> CapabilityResult:
    r = c.mapping(raw, where)
    # fields by name, their types checked here at run time
    texts: dict[str, Any] = {
        k: c.text(r, k, where) for k in ("file", "test", "capability", "task", "model")
    }
    status = c.text(r, "status", where)
    if status not in STATUSES:
        raise c.fail(f"{where}.status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
    counts: dict[str, Any] = {}
    for key in ("n", "passed"):
        if key not in r:
            raise c.fail(where, f"missing key {key!r}, expected an integer")
        counts[key] = c.integer(r[key], f"{where}.{key}")
    numbers: dict[str, Any] = {}
    for key in ("pass_rate", "ci_low", "ci_high", "threshold"):
        if key not in r:
            raise c.fail(where, f"missing key {key!r}, expected a number or null")
        numbers[key] = c.number(r[key], f"{where}.{key}")
    metrics = c.mapping(r.get("metrics", {}), f"{where}.metrics")
    unscored = c.mapping(r.get("unscored", {}), f"{where}.unscored")
    failures = c.listing(r.get("failures", []), f"{where}.failures")
    return CapabilityResult(
        **texts,
        **counts,
        **numbers,
        status=status,
        chance=c.number(r.get("chance"), f"{where}.chance"),
        line=c.integer(r.get("line", 0), f"{where}.line"),
        criterion=c.text(r, "criterion", where, ""),
        score_kind=c.text(r, "score_kind", where, "similarity"),
        ties=c.integer(r.get("ties", 0), f"{where}.ties"),
        judged=c.text(r, "judged", where, "pass_rate"),
        metrics={k: c.number(v, f"{where}.metrics[{k!r}]") for k, v in metrics.items()},
        slices=_slices(c, r.get("slices", {}), f"{where}.slices"),
        all_of_slices=_all_of_slices(c, r.get("all_of_slices", {}), f"{where}.all_of_slices"),
        ci_low_clustered=c.number(r.get("ci_low_clustered"), f"{where}.ci_low_clustered"),
        ci_high_clustered=c.number(r.get("ci_high_clustered"), f"{where}.ci_high_clustered"),
        clusters=c.integer(r.get("clusters", 0), f"{where}.clusters"),
        design_effect=c.number(r.get("design_effect"), f"{where}.design_effect"),
        reordered_share=c.number(r.get("reordered_share"), f"{where}.reordered_share"),
        failures=[_failure(c, f, f"{where}.failures[{i}]") for i, f in enumerate(failures)],
        unscored={k: c.integer(v, f"{where}.unscored[{k!r}]") for k, v in unscored.items()},
        message=c.text(r, "message", where, ""),
        known_failure=c.text(r, "known_failure", where, ""),
        content_hash=c.text(r, "content_hash", where, ""),
        gate=gate_from_json(c, r["gate"], f"{where}.gate") if r.get("gate") else None,
        prior=(
            prior_from_json(c, r["prior"], f"{where}.prior") if r.get("prior") is not None else None
        ),
        reference=(
            ReferenceDelta.from_json(c, r["reference"], f"{where}.reference")
            if r.get("reference")
            else None
        ),
    )


def _slices(c: JsonChecker, raw: Any, where: str) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for tag, values in c.mapping(raw, where).items():
        tag_where = f"{where}[{tag!r}]"
        out[tag] = {}
        for value, cell in c.mapping(values, tag_where).items():
            cell_where = f"{tag_where}[{value!r}]"
            cell = dict(c.mapping(cell, cell_where))
            for key in ("n", "passed"):
                if key not in cell:
                    raise c.fail(cell_where, f"missing key {key!r}, expected an integer")
                cell[key] = c.integer(cell[key], f"{cell_where}.{key}")
            cell["pass_rate"] = c.number(cell.get("pass_rate"), f"{cell_where}.pass_rate")
            out[tag][value] = cell
    return out


def _all_of_slices(
    c: JsonChecker, raw: Any, where: str
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``{all_of tag: {slice tag: {value: {groups, passed, rate}}}}``."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for group, tags in c.mapping(raw, where).items():
        group_where = f"{where}[{group!r}]"
        out[group] = {}
        for tag, values in c.mapping(tags, group_where).items():
            tag_where = f"{group_where}[{tag!r}]"
            out[group][tag] = {}
            for value, cell in c.mapping(values, tag_where).items():
                cell_where = f"{tag_where}[{value!r}]"
                cell = dict(c.mapping(cell, cell_where))
                for key in ("groups", "passed"):
                    if key not in cell:
                        raise c.fail(cell_where, f"missing key {key!r}, expected an integer")
                    cell[key] = c.integer(cell[key], f"{cell_where}.{key}")
                cell["rate"] = c.number(cell.get("rate"), f"{cell_where}.rate")
                out[group][tag][value] = cell
    return out


def _failure(c: JsonChecker, raw: Any, where: str) -> FailureExample:
    f = c.mapping(raw, where)
    lists = {}
    for key in ("images", "texts"):
        items = c.listing(f.get(key, []), f"{where}.{key}")
        if not all(isinstance(s, str) for s in items):
            raise c.fail(f"{where}.{key}", "expected a list of strings")
        lists[key] = list(items)
    thumbnails = c.listing(f.get("thumbnails", []), f"{where}.thumbnails")
    if not all(isinstance(s, str) for s in thumbnails):
        raise c.fail(f"{where}.thumbnails", "expected a list of file names")
    rows = c.listing(f.get("scores", []), f"{where}.scores")
    scores = [
        [
            c.number(x, f"{where}.scores[{i}][{j}]")
            for j, x in enumerate(c.listing(row, f"{where}.scores[{i}]"))
        ]
        for i, row in enumerate(rows)
    ]
    return FailureExample(
        id=str(f.get("id", "")),
        images=lists["images"],
        texts=lists["texts"],
        scores=scores,
        detail=c.text(f, "detail", where, ""),
        thumbnails=list(thumbnails),
        said=dict(f["said"]) if isinstance(f.get("said"), dict) else {},
    )


def outcomes_from_json(raw: Any) -> tuple[ExampleOutcome, ...]:
    """Outcomes as ``to_json(with_outcomes=True)`` wrote them (the xdist transport)."""
    return tuple(ExampleOutcome(**item) for item in raw or ())


def from_transport(raw: Mapping[str, Any]) -> CapabilityResult:
    """A result as ``to_json(with_outcomes=True)`` sent it from an xdist worker."""
    return replace(
        CapabilityResult.from_json(raw),
        fingerprint=str(raw.get("fingerprint", "")),
        outcomes=outcomes_from_json(raw.get("outcomes")),
    )
