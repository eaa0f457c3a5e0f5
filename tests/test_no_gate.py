"""A gate that gates nothing is red: ``--vl-baseline`` with a baseline that has no entry
(sharing an example id) for any selected item is a usage error (exit 4, one line naming the
baseline's paths against this run's), unless ``--vl-allow-no-gate``; a partial match stays a
warning under the matrix."""

from __future__ import annotations

import pytest
from helpers.gate_suite import N, checklist, scores

GATE = ("--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json", "--vl-report=rep")


@pytest.fixture
def saved(pytester: pytest.Pytester) -> pytest.Pytester:
    """gates.yaml (spatial, action) measured by ``old`` and saved as base.json; ``new``
    scores the same examples alike."""
    pytester.makefile(".yaml", gates=checklist({"spatial": 50, "action": 50}))
    wrong = {"spatial": set(range(10)), "action": set(range(10))}
    scores(pytester.path / "old.jsonl", wrong)
    scores(pytester.path / "new.jsonl", wrong)
    saving = ("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    pytester.runpytest(*saving).assert_outcomes(passed=2)
    return pytester


def _usage_error_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line.strip()]
    return line


def test_a_baseline_from_another_rootdir_is_a_usage_error(saved: pytest.Pytester) -> None:
    (saved.path / "gates.yaml").rename(saved.path / "moved.yaml")
    line = _usage_error_line(saved.runpytest(*GATE))
    assert line == (
        "ERROR: --vl-baseline base.json gates none of the 2 selected items: it has entries for "
        "gates.yaml, this run's items are in moved.yaml (entry paths are relative to the "
        f"rootdir, {saved.path}: run from the folder the baseline was saved in); "
        "--vl-allow-no-gate runs them ungated (a first run)"
    )
    assert not (saved.path / "rep" / "matrix.json").exists()  # a usage error writes nothing


def test_renamed_example_ids_gate_nothing_either(saved: pytest.Pytester) -> None:
    text = checklist({"spatial": 50, "action": 50})
    for i in range(N):
        text = text.replace(f"{{id: '{i}',", f"{{id: 'x{i}',")
    (saved.path / "gates.yaml").write_text(text)
    line = _usage_error_line(saved.runpytest(*GATE))
    assert "gates none of the 2 selected items: its entries for gates.yaml share no " in line


def test_the_count_is_taken_after_selection(saved: pytest.Pytester) -> None:
    saved.makefile(".yaml", extra=checklist({"fresh": 50}))
    scores(saved.path / "new.jsonl", {"spatial": set(), "action": set(), "fresh": set()})
    line = _usage_error_line(saved.runpytest(*GATE, "-k", "fresh"))
    assert "gates none of the 1 selected item: it has entries for gates.yaml, " in line
    assert "this run's items are in extra.yaml" in line
    # a partial match stays a warning, and the run its verdicts' status
    result = saved.runpytest(*GATE)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["vlcheck: WARNING: no gate for 1 of 3 items: *extra.yaml::fresh*"])


def test_the_opt_out_runs_them_ungated(saved: pytest.Pytester) -> None:
    (saved.path / "gates.yaml").rename(saved.path / "moved.yaml")
    result = saved.runpytest(*GATE, "--vl-allow-no-gate")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["vlcheck: WARNING: no gate for 2 of 2 items*"])
    saved.makeini("[pytest]\nvl_allow_no_gate = true\n")
    saved.runpytest(*GATE).assert_outcomes(passed=2)


def test_collect_only_is_not_a_run(saved: pytest.Pytester) -> None:
    (saved.path / "gates.yaml").rename(saved.path / "moved.yaml")
    assert saved.runpytest(*GATE, "--collect-only", "-q").ret == pytest.ExitCode.OK


def test_under_xdist_too(saved: pytest.Pytester) -> None:
    (saved.path / "gates.yaml").rename(saved.path / "moved.yaml")
    result = saved.runpytest_subprocess(*GATE, "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "gates none of the 2 selected items" in result.stderr.str() + result.stdout.str()
    assert not (saved.path / "rep" / "matrix.json").exists()
