"""The optional blocks of a result row: ``gate``, ``prior`` and ``reference``.

Typed so readers (verdicts, reports, JUnit, ``vlcheck merge``) use fields, not dict keys;
``to_json`` writes exactly the keys and order earlier versions wrote, so ``matrix.json``
files read back and written again stay byte-for-byte the same (README's matrix.json section).
They live in ``results/`` because the gates, reports and priors that produce and read them
all sit above it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pytest_vlcheck.results.json_checks import JsonChecker, is_number

__all__ = [
    "Gate",
    "GateComparison",
    "GateWarning",
    "Prior",
    "PriorBlock",
    "PriorNotApplicable",
    "ReferenceDelta",
    "gate_from_json",
    "prior_from_json",
]


def _boolean(c: JsonChecker, raw: Mapping[str, Any], key: str, where: str) -> bool:
    value = raw.get(key)
    if not isinstance(value, bool):
        raise c.fail(f"{where}.{key}", f"expected true or false, got {value!r}")
    return value


def _texts(c: JsonChecker, raw: Any, where: str, what: str) -> tuple[str, ...]:
    items = c.listing(raw, where)
    if not all(isinstance(item, str) for item in items):
        raise c.fail(where, f"expected a list of {what}")
    return tuple(items)


def _required(c: JsonChecker, raw: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in keys:
        if key not in raw:
            raise c.fail(where, f"missing key {key!r}")


@dataclass(frozen=True)
class GateComparison:
    """What the gate measured for one item against ``baseline_model``'s baseline entry;
    ``b``: examples lost, ``c``: examples gained.

    ``min_detectable_drop_pts`` is None when even every matched example flipping to wrong
    could not reach significance (the test is too small to gate on at this m), and for
    ``few_clusters``. ``test`` names the paired test behind ``p_mid``: ``mcnemar_midp`` (exact
    mid-p), ``clustered_midp`` (the mid-p on counts divided by ``design_effect``, when paired
    examples share a cluster), ``few_clusters`` (too few clusters to test: ``p_mid`` 1) or,
    in files written before, ``clustered_mcnemar`` (Durkalski's). ``clusters``: the paired
    examples' clusters (0: not counted); ``lost`` and ``gained``: the example ids behind
    ``b`` and ``c``. The last four are written only when they differ from their defaults,
    so files written before them read back and write again unchanged.
    """

    delta_pts: float
    baseline_rate: float
    current_rate: float
    n_matched: int
    b: int
    c: int
    p_mid: float
    p_corrected: float
    alpha_corrected: float
    regressed: bool
    improved: bool
    added: int
    removed: int
    min_detectable_drop_pts: float | None
    warnings: tuple[str, ...] = ()
    baseline_model: str = ""
    test: str = "mcnemar_midp"
    design_effect: float = 1.0
    clusters: int = 0
    lost: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()
    scores: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """For the first lost and gained examples shown: ``{id: {"now": grid, "baseline":
    grid}}``, ``baseline`` only where the baseline saved scores."""

    _NUMBERS: ClassVar = ("delta_pts", "baseline_rate", "current_rate", "p_mid", "p_corrected")
    _COUNTS: ClassVar = ("n_matched", "b", "c", "added", "removed")
    _OPTIONAL: ClassVar = {
        "design_effect": 1.0,
        "clusters": 0,
        "lost": (),
        "gained": (),
        "scores": {},
    }

    def to_json(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self) | {"warnings": list(self.warnings)}
        doc["scores"] = {k: dict(v) for k, v in self.scores.items()}
        for key, default in self._OPTIONAL.items():
            if doc[key] == default:
                del doc[key]
            elif isinstance(default, tuple):
                doc[key] = list(doc[key])
        return doc

    @classmethod
    def from_json(cls, c: JsonChecker, raw: Mapping[str, Any], where: str) -> GateComparison:
        keys = (*cls._NUMBERS, "alpha_corrected", *cls._COUNTS, "regressed", "improved")
        _required(c, raw, (*keys, "baseline_model"), where)
        # fields by name, their types checked here at run time
        numbers: dict[str, Any] = {}
        for key in (*cls._NUMBERS, "alpha_corrected"):
            number = c.number(raw[key], f"{where}.{key}")
            if number is None:
                raise c.fail(f"{where}.{key}", "expected a number, got null")
            numbers[key] = number
        counts: dict[str, Any] = {k: c.integer(raw[k], f"{where}.{k}") for k in cls._COUNTS}
        return cls(
            **numbers,
            **counts,
            regressed=_boolean(c, raw, "regressed", where),
            improved=_boolean(c, raw, "improved", where),
            min_detectable_drop_pts=c.number(
                raw.get("min_detectable_drop_pts"), f"{where}.min_detectable_drop_pts"
            ),
            warnings=_texts(c, raw.get("warnings", []), f"{where}.warnings", "warnings"),
            baseline_model=c.text(raw, "baseline_model", where),
            test=c.text(raw, "test", where, "mcnemar_midp"),
            design_effect=c.number(raw.get("design_effect", 1.0), f"{where}.design_effect") or 1.0,
            clusters=c.integer(raw.get("clusters", 0), f"{where}.clusters"),
            lost=_texts(c, raw.get("lost", []), f"{where}.lost", "example ids"),
            gained=_texts(c, raw.get("gained", []), f"{where}.gained", "example ids"),
            scores=_flipped_scores(c, raw.get("scores", {}), f"{where}.scores"),
        )


def _flipped_scores(c: JsonChecker, raw: Any, where: str) -> dict[str, dict[str, Any]]:
    """``{id: {"now": grid, "baseline": grid}}``, each grid a list of lists of numbers or
    null, ``baseline`` optional."""
    out: dict[str, dict[str, Any]] = {}
    for example, sides in c.mapping(raw, where).items():
        place = f"{where}[{example!r}]"
        block = c.mapping(sides, place)
        if "now" not in block or not set(block) <= {"now", "baseline"}:
            raise c.fail(place, 'expected {"now": scores} and optionally "baseline"')
        for side, grid in block.items():
            rows = c.listing(grid, f"{place}.{side}")
            if not all(
                isinstance(r, list) and all(x is None or is_number(x) for x in r) for r in rows
            ):
                raise c.fail(f"{place}.{side}", "expected a list of lists of numbers or null")
        out[example] = dict(block)
    return out


@dataclass(frozen=True)
class GateWarning:
    """A gated run's note on an item it could not gate (the baseline has no entry)."""

    warning: str

    def to_json(self) -> dict[str, Any]:
        return {"warning": self.warning}


Gate = GateComparison | GateWarning


def gate_from_json(c: JsonChecker, raw: Any, where: str) -> Gate:
    """A ``gate`` block: a warning, or a comparison with a baseline entry."""
    block = c.mapping(raw, where)
    if "warning" in block:
        return GateWarning(c.text(block, "warning", where))
    return GateComparison.from_json(c, block, where)


@dataclass(frozen=True)
class PriorNotApplicable:
    """The prior block of a test the prior cannot judge, or of a run without a prior that
    still has to say what became of the test's ``hard_threshold``."""

    priors: tuple[str, ...]
    reason: str
    hard_threshold: float | None = None
    applicable: ClassVar[bool] = False

    def to_json(self) -> dict[str, Any]:
        block: dict[str, Any] = {
            "applicable": self.applicable,
            "priors": list(self.priors),
            "reason": self.reason,
        }
        if self.hard_threshold is not None:
            block["hard_threshold"] = self.hard_threshold
        return block


@dataclass(frozen=True)
class PriorBlock:
    """What a linguistic prior says about the model's wins on one test (seed 001): the
    prior's accuracy, the model's hard-test accuracy with its Wilson interval, the gap, the
    hard threshold's verdict (None: not judged) and the Figure-1 ``grid`` (``{}`` when no
    unit had finite perplexities)."""

    priors: tuple[str, ...]
    n: int
    accuracy: float | None
    prior_accuracy: float | None
    n_hard: int
    hard_passed: int
    hard_accuracy: float | None
    hard_ci_low: float | None
    hard_ci_high: float | None
    linguistic_gap: float | None
    hard_threshold: float | None
    hard_threshold_met: bool | None
    grid: Mapping[str, Any] = field(default_factory=dict)
    applicable: ClassVar[bool] = True

    _NUMBERS: ClassVar = (
        "accuracy",
        "prior_accuracy",
        "hard_accuracy",
        "hard_ci_low",
        "hard_ci_high",
        "linguistic_gap",
        "hard_threshold",
    )
    _COUNTS: ClassVar = ("n", "n_hard", "hard_passed")

    def to_json(self) -> dict[str, Any]:
        block = {"applicable": self.applicable} | dataclasses.asdict(self)
        block["priors"] = list(self.priors)
        block["grid"] = dict(self.grid)
        return block

    @classmethod
    def from_json(cls, c: JsonChecker, raw: Mapping[str, Any], where: str) -> PriorBlock:
        for key in cls._COUNTS:
            if key not in raw:
                raise c.fail(where, f"missing key {key!r}, expected an integer")
        met = raw.get("hard_threshold_met")
        if met is not None and not isinstance(met, bool):
            raise c.fail(f"{where}.hard_threshold_met", "expected true, false or null")
        # fields by name, their types checked here at run time
        fields: dict[str, Any] = {k: c.integer(raw[k], f"{where}.{k}") for k in cls._COUNTS}
        fields |= {k: c.number(raw.get(k), f"{where}.{k}") for k in cls._NUMBERS}
        return cls(
            priors=_texts(c, raw.get("priors", []), f"{where}.priors", "prior names"),
            **fields,
            hard_threshold_met=met,
            grid=dict(c.mapping(raw.get("grid", {}), f"{where}.grid")),
        )


Prior = PriorBlock | PriorNotApplicable


def prior_from_json(c: JsonChecker, raw: Any, where: str) -> Prior:
    """A ``prior`` block: ``applicable`` and ``priors`` always; numbers where applicable."""
    block = c.mapping(raw, where)
    if not _boolean(c, block, "applicable", where):
        return PriorNotApplicable(
            priors=_texts(c, block.get("priors", []), f"{where}.priors", "prior names"),
            reason=c.text(block, "reason", where),
            hard_threshold=c.number(block.get("hard_threshold"), f"{where}.hard_threshold"),
        )
    return PriorBlock.from_json(c, block, where)


@dataclass(frozen=True)
class ReferenceDelta:
    """A later model against the run's first (``model``) on the same test: the change in
    points, the paired test's p (None: no example id shared) and its Holm adjustment over the
    run, the examples paired, the discordant counts ``(lost, gained)`` and the test, named
    as the gate block's ``test`` (written only when it is not the exact mid-p)."""

    model: str
    delta_pts: float
    p_value: float | None
    p_holm: float | None
    n_paired: int
    discordant: tuple[int, int]
    test: str = "mcnemar_midp"

    def to_json(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self) | {"discordant": list(self.discordant)}
        if self.test == "mcnemar_midp":
            del doc["test"]
        return doc

    @classmethod
    def from_json(cls, c: JsonChecker, raw: Any, where: str) -> ReferenceDelta:
        r = c.mapping(raw, where)
        _required(c, r, ("delta_pts", "n_paired", "discordant"), where)
        discordant = c.listing(r["discordant"], f"{where}.discordant")
        if len(discordant) != 2:
            raise c.fail(f"{where}.discordant", f"expected [lost, gained], got {discordant!r}")
        delta = c.number(r["delta_pts"], f"{where}.delta_pts")
        if delta is None:
            raise c.fail(f"{where}.delta_pts", "expected a number of points, got null")
        lost, gained = (c.integer(x, f"{where}.discordant[{i}]") for i, x in enumerate(discordant))
        return cls(
            model=c.text(r, "model", where),
            delta_pts=delta,
            p_value=c.number(r.get("p_value"), f"{where}.p_value"),
            p_holm=c.number(r.get("p_holm"), f"{where}.p_holm"),
            n_paired=c.integer(r["n_paired"], f"{where}.n_paired"),
            discordant=(lost, gained),
            test=c.text(r, "test", where, "mcnemar_midp"),
        )
