"""gates.counting, gates.decision.apply_gate and gates.wording.not_gated_warnings, by hand:
m counts every item of the selection that has a baseline entry, and a gated result carries a
typed gate block (a comparison, or a warning when its entry is missing)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pytest_vlcheck.gates import Baseline, GateSettings
from pytest_vlcheck.gates.baseline import BaselineEntry
from pytest_vlcheck.gates.counting import count_gated, count_python_gated
from pytest_vlcheck.gates.decision import apply_gate
from pytest_vlcheck.gates.wording import not_gated_warnings
from pytest_vlcheck.results import CapabilityResult, ExampleOutcome
from pytest_vlcheck.results.blocks import GateComparison, GateWarning


def entry(file: str, test: str, model: str, outcomes: dict[str, bool]) -> BaselineEntry:
    passed = sum(outcomes.values())
    return BaselineEntry(
        file=file,
        test=test,
        model=model,
        capability="a/b",
        task="caption",
        spec="tiny",
        fingerprint=None,
        content_hash="h",
        tool_version=None,
        git_commit=None,
        numbers={"n": len(outcomes), "passed": passed, "pass_rate": passed / len(outcomes)},
        outcomes=outcomes,
    )


ALL_RIGHT = {f"e{i}": True for i in range(20)}
BASELINE = Baseline(
    (
        entry("a.yaml", "color", "m1", ALL_RIGHT),
        entry("a.yaml", "count", "m1", ALL_RIGHT),
        entry("a.yaml", "count", "m2", ALL_RIGHT),
        entry("test_py.py", "test_fn", "m1", ALL_RIGHT),
        entry("test_py.py", "test_fn::red", "m1", ALL_RIGHT),
        entry("test_py.py", "test_fn::blue", "m1", ALL_RIGHT),
        entry("test_py.py", "test_fnx", "m1", ALL_RIGHT),
    )
)
SETTINGS = GateSettings(baseline=BASELINE)


def test_count_gated_counts_items_with_an_entry() -> None:
    items = [
        ("a.yaml", "color", "m1"),  # its only entry, same model
        ("a.yaml", "color", "m9"),  # one model in the baseline: it is the reference for all
        ("a.yaml", "count", "m2"),  # two models: the same name
        ("a.yaml", "count", "m9"),  # two models, neither named m9: no entry
        ("b.yaml", "color", "m1"),  # another file
    ]
    assert count_gated(SETTINGS, items) == 3
    assert count_gated(GateSettings(), items) == 0
    assert count_gated(GateSettings(baseline=BASELINE, baseline_model="m2"), items) == 2


def test_count_python_gated_counts_the_key_and_its_named_rows() -> None:
    # test_fn: its own entry and its two ``evaluate`` rows; test_fnx is another test.
    assert count_python_gated(SETTINGS, [("test_py.py", "test_fn", "m1")]) == 3
    assert count_python_gated(SETTINGS, [("test_py.py", "test_fnx", "m1")]) == 1
    assert count_python_gated(SETTINGS, [("other.py", "test_fn", "m1")]) == 0
    assert count_python_gated(GateSettings(), [("test_py.py", "test_fn", "m1")]) == 0


def result(test: str, correct: int, n: int = 20) -> CapabilityResult:
    outcomes = tuple(ExampleOutcome(f"e{i}", i < correct, False, [[1.0]]) for i in range(n))
    return CapabilityResult(
        file="a.yaml",
        test=test,
        capability="a/b",
        task="caption",
        model="m1",
        n=n,
        passed=correct,
        pass_rate=correct / n,
        ci_low=None,
        ci_high=None,
        threshold=0.5,
        chance=0.5,
        status="passed",
        content_hash="h",
        outcomes=outcomes,
    )


def test_apply_gate_stores_a_typed_comparison_or_warning() -> None:
    # 20 right before, 10 right now: b = 10 lost, c = 0, mid-p = 2**-10 < 0.05 / 2.
    gated = apply_gate(result("color", 10), SETTINGS, m=2, conditions={})
    assert isinstance(gated.gate, GateComparison)
    assert (gated.gate.b, gated.gate.c, gated.gate.baseline_model) == (10, 0, "m1")
    assert gated.gate.regressed and gated.status == "failed"
    assert gated.to_json()["gate"]["baseline_model"] == "m1"
    missing = apply_gate(result("shape", 20), SETTINGS, m=2, conditions={})
    assert missing.gate == GateWarning("no baseline entry for this test")
    assert missing.status == "passed"
    assert apply_gate(result("color", 10), GateSettings(), m=2, conditions={}).gate is None


def test_not_gated_warnings_names_the_items_without_an_entry(tmp_path: Path) -> None:
    gated = [
        apply_gate(result(test, 20), SETTINGS, m=1, conditions={}) for test in ("color", "shape")
    ]
    [text] = not_gated_warnings(gated, SETTINGS, tmp_path)
    assert text.startswith("vlcheck: WARNING: no gate for 1 of 2 items")
    assert "a.yaml::shape [m1]" in text and "test_py.py" in text
    assert not_gated_warnings(gated[:1], SETTINGS, tmp_path) == []


def test_an_entry_sharing_no_example_id_is_not_gated(tmp_path: Path) -> None:
    renamed = dataclasses.replace(
        result("color", 0),
        status="failed",
        outcomes=tuple(ExampleOutcome(f"x{i}", False, False, [[1.0]]) for i in range(5)),
    )
    gated = apply_gate(renamed, SETTINGS, m=1, conditions={})
    assert gated.gate == GateWarning(
        "no example id in common with the baseline entry of m1 (20 ids there, 5 here): "
        "nothing to pair"
    )
    assert gated.status == "failed"  # the threshold's verdict, untouched
    missing = apply_gate(result("shape", 20), SETTINGS, m=1, conditions={})
    no_entry, unpaired = not_gated_warnings([gated, missing], SETTINGS, tmp_path)
    assert no_entry.startswith("vlcheck: WARNING: no gate for 1 of 2 items")
    assert unpaired == (
        "vlcheck: WARNING: not gated: 1 of 2 items share no example id with their baseline "
        "entry: a.yaml::color [m1]; the example ids changed since the baseline was saved: save "
        "a new baseline"
    )
