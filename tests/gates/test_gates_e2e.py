"""Regression gates end to end: save a baseline, gate a new run against it, through pytest.

Scores come from ``scores:`` files, so which examples a "checkpoint" gets right is exact:
example i of a test passes when its caption scores 0.6 against the negative's 0.4.
"""

from __future__ import annotations

import json

import pytest
from helpers.gate_suite import N, checklist, scores


@pytest.fixture
def suite(pytester: pytest.Pytester):
    """Two tests; the baseline checkpoint gets 10 of 60 wrong on each, and is saved."""
    pytester.makefile(".yaml", gates=checklist({"spatial": 50, "action": 50}))
    scores(pytester.path / "old.jsonl", {"spatial": set(range(10)), "action": set(range(10))})
    result = pytester.runpytest("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    result.assert_outcomes(passed=2)
    return pytester


def gate(pytester: pytest.Pytester, wrong: dict[str, set[int]], *args: str):
    scores(pytester.path / "new.jsonl", wrong)
    return pytester.runpytest(
        "--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json", "--vl-report=rep", *args
    )


def test_baseline_file_holds_outcomes_and_provenance(suite: pytest.Pytester) -> None:
    doc = json.loads((suite.path / "base.json").read_text())
    assert doc["vlcheck_baseline"] == 1
    entry = next(e for e in doc["entries"] if e["test"] == "spatial")
    assert entry["file"] == "gates.yaml" and entry["model"] == "old"
    assert entry["numbers"]["passed"] == 50 and len(entry["outcomes"]) == N
    assert entry["outcomes"]["3"] is False and entry["outcomes"]["30"] is True
    assert entry["content_hash"] and entry["conditions"]["batch_size"] == "auto"


def test_significant_drop_fails_exactly_that_test(suite: pytest.Pytester) -> None:
    # spatial loses 12 more examples (none gained): -20 pts, mid-p = 2^-12 * ... << 0.05/2
    result = gate(suite, {"spatial": set(range(22)), "action": set(range(10))})
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*REGRESSED relation/spatial: 63.3% (38/60, *) >= 50.0% (gate: regressed: dropped "
            "20.0 pts, significant (McNemar mid-p 0.00024 < alpha/m 0.025; 12 lost, 0 gained) "
            "vs baseline 83.3%) [[]new]*",
            "*12 lost, 0 gained since the baseline*",
        ]
    )
    # pytest prints nothing for the passing item: the gate section says what the gate found
    result.stdout.fnmatch_lines(
        [
            "*- vlcheck gate -*",
            "gates.yaml::spatial [[]new]: regressed: dropped 20.0 pts, significant *",
            "gates.yaml::action [[]new]: unchanged: 0.0 pts, no significant change (McNemar "
            "mid-p 1 >= alpha/m 0.025; 0 lost, 0 gained)",
        ]
    )
    row = next(
        r
        for r in json.loads((suite.path / "rep" / "matrix.json").read_text())["results"]
        if r["test"] == "spatial"
    )
    assert row["gate"]["regressed"] and row["gate"]["b"] == 12 and row["status"] == "failed"
    samples = (suite.path / "rep" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == 2 * N
    assert json.loads(samples[0])["file"] == "gates.yaml"


def test_small_drop_is_not_significant(suite: pytest.Pytester) -> None:
    # 3 discordant examples of 60 (-5 pts): mid-p 0.125, not a regression
    result = gate(suite, {"spatial": set(range(13)), "action": set(range(10))})
    result.assert_outcomes(passed=2)


def test_drop_within_max_drop_passes(suite: pytest.Pytester) -> None:
    result = gate(suite, {"spatial": set(range(22)), "action": set(range(10))}, "--vl-max-drop=25")
    result.assert_outcomes(passed=2)


def test_correction_for_many_items_gated(suite: pytest.Pytester) -> None:
    # 6 lost: mid-p 0.0156 < 0.05 alone, but corrected over the m = 2 tests gated at
    # alpha 0.02 it is not significant (0.0156 > 0.01)
    wrong = {"spatial": set(range(16)), "action": set(range(10))}
    gate(suite, wrong, "-k", "spatial", "--vl-alpha=0.02").assert_outcomes(failed=1)
    gate(suite, wrong, "--vl-alpha=0.02").assert_outcomes(passed=2)


def test_gate_only_fails_on_regressions_alone(suite: pytest.Pytester) -> None:
    wrong = {"spatial": set(range(40)), "action": set(range(40))}
    result = gate(suite, wrong, "--vl-gate-only", "--vl-max-drop=100")
    result.assert_outcomes(passed=2)  # below threshold, but no gate failure
    rows = json.loads((suite.path / "rep" / "matrix.json").read_text())["results"]
    assert [(r["status"], r["threshold_met"]) for r in rows] == [("passed", False)] * 2


def test_gate_only_does_not_fail_an_item_without_an_entry(suite: pytest.Pytester) -> None:
    """--vl-gate-only: only a gate fails items, so one the baseline cannot gate does not fail
    on its threshold; matrix.json still says the threshold was missed."""
    suite.makefile(".yaml", extra=checklist({"fresh": 90}))
    scores(suite.path / "new.jsonl", {"spatial": set(), "action": set(), "fresh": set(range(30))})
    result = suite.runpytest(
        "--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json", "--vl-report=rep",
        "--vl-gate-only",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    rows = {
        r["test"]: r
        for r in json.loads((suite.path / "rep" / "matrix.json").read_text())["results"]
    }
    assert rows["fresh"]["threshold_met"] is False
    assert rows["fresh"]["gate"] == {"warning": "no baseline entry for this test"}
    result.stdout.fnmatch_lines(["extra.yaml::fresh [[]new]: not gated: no baseline entry*"])


def test_subset_run_merges_into_the_baseline(suite: pytest.Pytester) -> None:
    scores(suite.path / "new.jsonl", {"spatial": set(range(5)), "action": set()})
    result = suite.runpytest(
        "--vl-model=new=scores:new.jsonl", "--vl-save-baseline=base.json", "-k", "spatial"
    )
    result.assert_outcomes(passed=1)
    entries = json.loads((suite.path / "base.json").read_text())["entries"]
    assert sorted((e["test"], e["model"]) for e in entries) == [
        ("action", "old"),
        ("spatial", "new"),
        ("spatial", "old"),
    ]


def test_changed_test_warns(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", gates=checklist({"spatial": 40, "action": 50}))
    result = gate(suite, {"spatial": set(range(22)), "action": set(range(10))})
    result.stdout.fnmatch_lines(["*warning: the test changed since the baseline*"])


def test_xdist_gives_the_serial_verdicts(suite: pytest.Pytester) -> None:
    wrong = {"spatial": set(range(22)), "action": set(range(13))}
    serial = json.loads((gate(suite, wrong), (suite.path / "rep" / "matrix.json").read_text())[1])[
        "results"
    ]
    gate(suite, wrong, "-n", "2").assert_outcomes(passed=1, failed=1)
    parallel = json.loads((suite.path / "rep" / "matrix.json").read_text())["results"]
    assert [r["gate"] for r in serial] == [r["gate"] for r in parallel]


def test_bad_baseline_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=checklist({"spatial": 50}))
    (pytester.path / "base.json").write_text('{"something": 1}')
    (pytester.path / "x.jsonl").write_text("")  # the spec's file must exist (checked first)
    result = pytester.runpytest("--vl-model=scores:x.jsonl", "--vl-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vl-baseline: *base.json*"])
    assert "Traceback" not in result.stderr.str()


def test_a_baseline_that_matches_no_item_says_so(suite: pytest.Pytester) -> None:
    """Entries are keyed by path relative to the rootdir: a moved checklist (or another
    rootdir) finds none, and a gate that checks nothing must not pass silently."""
    (suite.path / "gates.yaml").rename(suite.path / "moved.yaml")
    wrong = {"spatial": set(range(40)), "action": set(range(10))}
    result = gate(suite, wrong, "--vl-allow-no-gate")  # else a usage error: test_no_gate.py
    result.stdout.fnmatch_lines(
        [
            "vlcheck: WARNING: no gate for 2 of 2 items: the baseline has no entry for "
            "moved.yaml::spatial [[]new[]], moved.yaml::action [[]new[]]; it has entries for "
            "gates.yaml, and entry paths are relative to the rootdir (*)*"
        ]
    )


def test_a_baseline_model_the_baseline_lacks_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = gate(suite, {"spatial": set(range(10))}, "--vl-baseline-model=zzz")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vl-baseline-model is 'zzz', which base.json does not hold; expected one of: old"]
    )
