"""``CapabilityResult.to_json`` is written field by field (issue 25): it must give exactly the
row, key order included, that the earlier ``dataclasses.asdict`` version gave, and it must
hand readers copies, as a deep copy did."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

import pytest

from pytest_vlcheck.results import CapabilityResult, ExampleOutcome, FailureExample
from pytest_vlcheck.results.blocks import (
    GateComparison,
    GateWarning,
    PriorBlock,
    PriorNotApplicable,
    ReferenceDelta,
)


def asdict_row(result: CapabilityResult, *, with_outcomes: bool = False) -> dict[str, Any]:
    """The earlier ``to_json`` (as it was when ``content_hash`` joined the row): the
    reference the typed one is held to."""
    row = asdict(result)
    row["threshold_met"] = result.threshold_met
    transport = {key: row.pop(key) for key in ("fingerprint", "outcomes")}
    for key in ("gate", "prior", "reference"):
        block = getattr(result, key)
        row[key] = None if block is None else block.to_json()
    for key in ("gate", "prior", "reference", "known_failure", "content_hash"):
        if not row[key]:
            row.pop(key)
    if with_outcomes:
        row.update(transport)
    return row


GATE = GateComparison(
    delta_pts=-12.5,
    baseline_rate=0.8,
    current_rate=0.675,
    n_matched=40,
    b=6,
    c=1,
    p_mid=0.0390625,
    p_corrected=0.078125,
    alpha_corrected=0.025,
    regressed=False,
    improved=False,
    added=2,
    removed=0,
    min_detectable_drop_pts=15.0,
    warnings=("run conditions differ from the baseline: device cpu -> cuda",),
    baseline_model="base",
)
PRIOR = PriorBlock(
    priors=("gpt2",),
    n=40,
    accuracy=0.675,
    prior_accuracy=0.5,
    n_hard=20,
    hard_passed=9,
    hard_accuracy=0.45,
    hard_ci_low=0.25,
    hard_ci_high=0.66,
    linguistic_gap=0.225,
    hard_threshold=0.5,
    hard_threshold_met=False,
    grid={"true_edges": [2.0, 4.0], "n": [[1, 1], [1, 1]]},
)


def realistic(**changes: Any) -> CapabilityResult:
    """A measured caption test with every optional part filled in."""
    outcomes = tuple(
        ExampleOutcome(f"ex-{i}", i % 3 != 0, i == 4, [[0.31 + i / 100, 0.29, float("nan")]])
        for i in range(40)
    )
    base = CapabilityResult(
        file="checklists/sugarcrepe.yaml",
        test="swap_att",
        capability="attribute/swap",
        task="caption",
        model="clip",
        n=40,
        passed=27,
        pass_rate=0.675,
        ci_low=0.52,
        ci_high=0.8,
        threshold=0.5,
        chance=0.5,
        status="failed",
        line=12,
        criterion="",
        score_kind="similarity",
        ties=1,
        judged="pass_rate",
        metrics={"macro_average": 0.6, "all_of_scene": None},
        slices={"size": {"small": {"n": 20, "passed": 12, "pass_rate": 0.6}}},
        failures=[
            FailureExample(
                "ex-0", ["COCO_1.jpg"], ["a red car", "a car red"], [[0.3, 0.31]], "lost", ["t.jpg"]
            )
        ],
        unscored={"missing image": 2},
        message="",
        known_failure="binding is hard",
        gate=GATE,
        prior=PRIOR,
        reference=ReferenceDelta("first", -2.0, 0.5, 1.0, 12, (3, 1)),
        fingerprint="sha256:abc",
        content_hash="f00d",
        outcomes=outcomes,
    )
    return CapabilityResult(**{f.name: getattr(base, f.name) for f in fields(base)} | changes)


CASES = {
    "everything": realistic(),
    "no blocks": realistic(gate=None, prior=None, reference=None, known_failure=""),
    "gate warning": realistic(gate=GateWarning("no baseline entry"), prior=None),
    "prior n/a": realistic(prior=PriorNotApplicable(("gpt2",), "an image test")),
    "errored": realistic(
        n=0, passed=0, status="error", message="boom", outcomes=(), failures=[], slices={}
    ),
}


@pytest.mark.parametrize("with_outcomes", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_the_typed_row_is_the_asdict_row(case: str, with_outcomes: bool) -> None:
    result = CASES[case]
    typed = result.to_json(with_outcomes=with_outcomes)
    expected = asdict_row(result, with_outcomes=with_outcomes)
    assert list(typed) == list(expected)  # the published key order
    assert repr(typed) == repr(expected)  # values, nan and container types included


def test_the_row_is_a_copy_a_reader_may_edit() -> None:
    result = realistic()
    row = result.to_json(with_outcomes=True)
    row["metrics"]["macro_average"] = 0.0
    row["slices"]["size"]["small"]["n"] = 0
    row["failures"][0]["scores"][0][0] = 0.0
    row["failures"][0]["images"].append("x")
    row["unscored"].clear()
    row["outcomes"][0]["scores"][0][0] = 0.0
    assert result == realistic()
    assert result.outcomes[0].scores[0][0] == 0.31
    assert json.dumps(asdict_row(result), allow_nan=True) == json.dumps(result.to_json())


def test_every_field_is_written() -> None:
    # a field added to the result and forgotten in ``to_json`` fails here
    row = realistic().to_json(with_outcomes=True)
    assert {f.name for f in fields(CapabilityResult)} <= set(row)
