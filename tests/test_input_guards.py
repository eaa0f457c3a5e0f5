"""Bounds on what a user may type or hand in, through the public commands.

Every refusal is one line naming the option (as its caller spelled it) or the file (and line
where it has one), a usage error (4 from pytest, 2 from ``vlcheck``), no traceback, and no
earlier file lost. Gate inputs: ``--vl-max-drop``, ``--vl-alpha`` and baseline files, which
are validated whole before any scoring. Bounds: numbers with hundreds of digits, a shard
count of ten billion, files nested thousands of levels deep. Gating: an item whose baseline
entry shares no example id is not gated, and says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from helpers.gate_suite import N, checklist, scores

from pytest_vlcheck import evaluate
from pytest_vlcheck.cli import main
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.run.sharding import MAX_SHARDS, assign_shards

USAGE = pytest.ExitCode.USAGE_ERROR
DIGITS = "9" * 400
DEEP = "[" * 5000 + "]" * 5000
TOO_DEEP = "nested too deep: more than 64 levels of lists and mappings; expected at most 64"


def no_traceback(result: pytest.RunResult) -> bool:
    text = result.stdout.str() + result.stderr.str()
    return "Traceback" not in text and "RecursionError" not in text


def refused(result: pytest.RunResult, line: str) -> None:
    """A pytest usage error whose one ``ERROR:`` line is ``line``, and nothing ran."""
    assert result.ret == USAGE, result.stderr.str()
    assert f"ERROR: {line}" in result.stderr.str().splitlines()
    assert no_traceback(result)
    assert "passed" not in result.stdout.str()


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """One caption test of N examples; the baseline checkpoint gets 10 wrong and is saved."""
    pytester.makefile(".yaml", gates=checklist({"spatial": 50}))
    scores(pytester.path / "old.jsonl", {"spatial": set(range(10))})
    scores(pytester.path / "new.jsonl", {"spatial": set(range(10))})
    result = pytester.runpytest("--vl-model=old=scores:old.jsonl", "--vl-save-baseline=base.json")
    result.assert_outcomes(passed=1)
    return pytester


# --- gate options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "line"),
    [
        ("--vl-max-drop=nan", "--vl-max-drop is nan; expected a finite number from 0 to 100"),
        ("--vl-max-drop=inf", "--vl-max-drop is inf; expected a finite number from 0 to 100"),
        ("--vl-max-drop=-1", "--vl-max-drop is -1.0; expected a finite number from 0 to 100"),
        ("--vl-max-drop=100.5", "--vl-max-drop is 100.5; expected a finite number from 0 to 100"),
        ("--vl-alpha=nan", "--vl-alpha is nan; expected a finite number in (0, 1)"),
        ("--vl-alpha=-inf", "--vl-alpha is -inf; expected a finite number in (0, 1)"),
        ("--vl-alpha=0", "--vl-alpha is 0.0; expected a finite number in (0, 1)"),
        ("--vl-alpha=1", "--vl-alpha is 1.0; expected a finite number in (0, 1)"),
        ("--vl-threshold=nan", "--vl-threshold is nan; expected a finite number from 0 to 1"),
    ],
)
def test_gate_numbers_out_of_range_are_usage_errors(
    suite: pytest.Pytester, option: str, line: str
) -> None:
    refused(suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json", option), line)


@pytest.mark.parametrize(
    ("keyword", "message"),
    [
        ({"max_drop": float("nan")}, "max_drop is nan; expected a finite number from 0 to 100"),
        ({"max_drop": 1e9}, "max_drop is 1000000000.0; expected a finite number from 0 to 100"),
        ({"alpha": float("inf")}, "alpha is inf; expected a finite number in (0, 1)"),
        ({"alpha": True}, "alpha is True; expected a finite number in (0, 1)"),
        ({"batch_size": 10**400}, "batch_size is a number of more than 30 digits; expected a"),
        ({"cache_size": 10**5000}, "cache_size is a number of more than 30 digits; expected"),
        ({"batch_size": 10**5000}, "batch_size is a number of more than 30 digits; expected a"),
        ({"cache_size": 2.5}, "cache_size is 2.5; expected a size from 1 byte to 1024TB"),
        ({"cache_size": DIGITS}, "cache_size is '" + "9" * 20 + "...' (400 characters); expected"),
    ],
)
def test_python_keywords_are_named_as_keywords(
    suite: pytest.Pytester, keyword: dict, message: str
) -> None:
    with pytest.raises(VlcheckUserError) as caught:
        evaluate("scores:new.jsonl", suite.path / "gates.yaml", **keyword)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


# --- bounded integers and sizes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "line"),
    [
        (
            f"--vl-cache-size={DIGITS}",
            f"--vl-cache-size is '{'9' * 20}...' (400 characters); expected a size from 1 byte "
            "to 1024TB, e.g. 500MB or 2GB",
        ),
        (
            "--vl-cache-size=2000TB",
            "--vl-cache-size is '2000TB'; expected a size from 1 byte to 1024TB, e.g. 500MB or 2GB",
        ),
        (
            f"--vl-batch-size={DIGITS}",
            f"--vl-batch-size is '{'9' * 20}...' (400 characters); expected a whole number from "
            "1 to 65536, or auto",
        ),
        (
            "--vl-batch-size=100000",
            "--vl-batch-size is 100000; expected a whole number from 1 to 65536, or auto",
        ),
        ("--vl-step=1e3", "--vl-step is '1e3'; expected a whole number from 0 to 2**63 - 1"),
        (
            f"--vl-step={DIGITS}",
            f"--vl-step is '{'9' * 20}...' (400 characters); expected a whole number from 0 to "
            "2**63 - 1",
        ),
        (
            "--vl-max-image-pixels=0",
            "--vl-max-image-pixels is 0; expected a whole number from 1 to 2**40",
        ),
        (
            "--vl-shard=1/10000000000",
            "--vl-shard is '1/10000000000'; expected K/N with whole numbers 1 <= K <= N <= "
            "1000000, e.g. 2/4",
        ),
        (
            f"--vl-shard=1/{DIGITS}",
            f"--vl-shard is '1/{'9' * 18}...' (402 characters); expected K/N with whole "
            "numbers 1 <= K <= N <= 1000000, e.g. 2/4",
        ),
        (
            "--vl-shard=²/3",
            "--vl-shard is '²/3'; expected K/N with whole numbers 1 <= K <= N <= 1000000, e.g. 2/4",
        ),
    ],
)
def test_numbers_are_parsed_with_bounds(suite: pytest.Pytester, option: str, line: str) -> None:
    refused(suite.runpytest("--vl-model=scores:new.jsonl", option), line)


def test_ini_values_are_bounded_and_named_as_ini(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=checklist({"spatial": 50}))
    pytester.makeini(f"[pytest]\nvl_cache_size = {DIGITS}\n")
    refused(
        pytester.runpytest("--vl-model=scores:x.jsonl"),
        f"vl_cache_size (ini) is '{'9' * 20}...' (400 characters); expected a size from 1 byte "
        "to 1024TB, e.g. 500MB or 2GB",
    )
    pytester.makeini("[pytest]\nvl_batch_size = 0\n")
    refused(
        pytester.runpytest("--vl-model=scores:x.jsonl"),
        "vl_batch_size (ini) is 0; expected a whole number from 1 to 65536, or auto",
    )


def test_the_largest_shard_count_allocates_per_group_not_per_job() -> None:
    """The split's memory follows the groups: a million jobs cost what four do."""
    tracemalloc.start()
    assignment = assign_shards({"a": 3, "b": 1}, MAX_SHARDS)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert assignment == {"a": 1, "b": 2}
    assert peak < 10_000


def test_the_last_of_a_million_shards_runs_nothing(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--vl-model=scores:new.jsonl", f"--vl-shard={MAX_SHARDS}/{MAX_SHARDS}")
    assert result.ret == 0 and no_traceback(result)
    result.stdout.fnmatch_lines(["*1 deselected*"])


# --- baselines, validated whole before any scoring -----------------------------------------


def _edit_baseline(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc, doc["entries"][0])
    path.write_text(json.dumps(doc, indent=1))


ENTRY = "entries[0] (gates.yaml::spatial [old])"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda doc, e: doc.update(vlcheck_baseline=2),
            "baseline format 2 was written by a newer pytest-vlcheck; this one reads format 1: "
            "upgrade pytest-vlcheck, or save a new baseline with this one",
        ),
        (
            lambda doc, e: doc.update(vlcheck_baseline="1"),
            "unsupported baseline format version '1'; expected \"vlcheck_baseline\": 1 (save a "
            "new baseline with this pytest-vlcheck)",
        ),
        (
            lambda doc, e: e["numbers"].update(pass_rate=1.5),
            f"{ENTRY}.numbers.pass_rate: expected a number from 0 to 1, got 1.5",
        ),
        (
            lambda doc, e: e["numbers"].update(pass_rate=0.5),
            f"{ENTRY}.numbers.pass_rate: is 0.5; expected passed / n = 50/60",
        ),
        (
            lambda doc, e: e["numbers"].update(passed=70),
            f"{ENTRY}.numbers: passed is 70 but n is 60; expected passed <= n",
        ),
        (
            lambda doc, e: e["numbers"].update(ci_low="low"),
            f"{ENTRY}.numbers.ci_low: expected a number from 0 to 1, got 'low'",
        ),
        (
            lambda doc, e: e["outcomes"].pop("7"),
            f"{ENTRY}.outcomes: 59 outcomes, 50 true; expected n = 60 outcomes, passed = 50 true",
        ),
        (
            lambda doc, e: e["outcomes"].update({"3": True}),
            f"{ENTRY}.outcomes: 60 outcomes, 51 true; expected n = 60 outcomes, passed = 50 true",
        ),
        (
            lambda doc, e: e.update(file=7),
            "entries[0].file: expected a string, got 7",
        ),
    ],
)
def test_a_bad_baseline_is_refused_before_scoring(
    suite: pytest.Pytester, change, message: str
) -> None:
    base = suite.path / "base.json"
    _edit_baseline(base, change)
    result = suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json")
    refused(result, f"--vl-baseline: base.json: {message}")


def test_an_example_id_twice_in_an_entry_is_refused(suite: pytest.Pytester) -> None:
    base = suite.path / "base.json"
    text = base.read_text()
    base.write_text(text.replace('"outcomes": {', '"outcomes": {\n    "12": false,', 1))
    refused(
        suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json"),
        f"--vl-baseline: base.json: {ENTRY}.outcomes: key '12' appears twice; expected each "
        "key once",
    )


def test_truncated_garbage_and_deep_baselines_are_one_line(suite: pytest.Pytester) -> None:
    base = suite.path / "base.json"
    text = base.read_text()
    base.write_text(text[: len(text) // 2])
    lines = text[: len(text) // 2].count("\n") + 1  # the line the cut ends on
    result = suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json")
    assert result.ret == USAGE and no_traceback(result)
    result.stderr.fnmatch_lines([f"ERROR: --vl-baseline: base.json:{lines}: invalid JSON: *"])
    base.write_bytes(b"\xff\xfe\x00garbage")
    result = suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json")
    assert result.ret == USAGE and no_traceback(result)
    result.stderr.fnmatch_lines(
        ["ERROR: --vl-baseline: base.json: cannot read a vlcheck baseline*"]
    )
    base.write_text('{"vlcheck_baseline": 1,\n "entries": ' + DEEP + "}")
    refused(
        suite.runpytest("--vl-model=scores:new.jsonl", "--vl-baseline=base.json"),
        f"--vl-baseline: base.json:2: {TOO_DEEP}",
    )


def test_a_bad_baseline_to_merge_into_is_refused_and_kept(suite: pytest.Pytester) -> None:
    base = suite.path / "base.json"
    _edit_baseline(base, lambda doc, e: doc.update(vlcheck_baseline=9))
    before = base.read_bytes()
    result = suite.runpytest("--vl-model=new=scores:new.jsonl", "--vl-save-baseline=base.json")
    assert result.ret == USAGE and no_traceback(result)
    result.stderr.fnmatch_lines(
        ["ERROR: --vl-save-baseline: base.json: baseline format 9 was written by a newer *"]
    )
    assert base.read_bytes() == before
    (suite.path / "folder").mkdir()
    result = suite.runpytest("--vl-model=new=scores:new.jsonl", "--vl-save-baseline=folder")
    assert result.ret == USAGE and no_traceback(result)
    result.stderr.fnmatch_lines(
        ["ERROR: --vl-save-baseline folder is a folder; expected the baseline file"]
    )


# --- not gated: no example id in common -----------------------------------------------------


def _renumbered(test_id: str, renamed: range) -> str:
    """The suite's checklist with the ids of examples ``renamed`` changed (content too)."""
    text = checklist({test_id: 50})
    for i in renamed:
        text = text.replace(f"{{id: '{i}',", f"{{id: 'x{i}',")
    return text


def test_an_entry_sharing_no_example_id_is_not_gated_and_says_so(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", gates=_renumbered("spatial", range(N)))
    scores(suite.path / "new.jsonl", {"spatial": set(range(50))})  # far below the baseline
    result = suite.runpytest(
        "--vl-model=new=scores:new.jsonl",
        "--vl-baseline=base.json",
        "--vl-report=rep",
        "--vl-allow-no-gate",  # else a usage error (tests/test_no_gate.py)
    )
    result.assert_outcomes(failed=1)  # by the threshold alone: the gate compared nothing
    result.stdout.fnmatch_lines(
        [
            "relation/spatial: 16.7% (10/60, *) < 50.0% (not gated: no example id in common "
            f"with the baseline entry of old ({N} ids there, {N} here): nothing to pair) [[]new[]]",
            "relation/spatial  50.0%  *16.7% ✗ (n=60) not gated",
            "vlcheck: WARNING: not gated: 1 of 1 items share no example id with their baseline "
            "entry: gates.yaml::spatial [[]new[]]; the example ids changed since the baseline "
            "was saved: save a new baseline",
        ]
    )
    row = json.loads((suite.path / "rep" / "matrix.json").read_text())["results"][0]
    assert row["gate"] == {
        "warning": f"no example id in common with the baseline entry of old ({N} ids there, "
        f"{N} here): nothing to pair"
    }


def test_a_passing_item_not_gated_is_visible_too(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", gates=_renumbered("spatial", range(N)))
    result = suite.runpytest(
        "--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json", "--vl-allow-no-gate"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "relation/spatial  50.0%  *83.3% ✓ (n=60) not gated",
            "vlcheck: WARNING: not gated: 1 of 1 items share no example id*",
        ]
    )


def test_a_partial_id_match_names_the_paired_count(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", gates=_renumbered("spatial", range(40, N)))
    scores(suite.path / "new.jsonl", {"spatial": set(range(40))})  # 20 lost of the 40 paired
    result = suite.runpytest("--vl-model=new=scores:new.jsonl", "--vl-baseline=base.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "REGRESSED relation/spatial: 33.3% (20/60, *) < 50.0% (gate: regressed: dropped "
            "50.0 pts, significant (McNemar mid-p * < alpha/m *; 30 lost, 0 gained) vs baseline "
            "83.3%, 40 of 60 examples paired) [[]new[]]",
            "*40 examples paired: 30 lost, 0 gained since the baseline",
            "*20 examples added, 20 removed since the baseline",
        ]
    )
    assert "not gated" not in result.stdout.str()


# --- nesting too deep, in every reader ----------------------------------------------------


def test_a_checklist_nested_too_deep(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", deep=f"vlcheck: 1\ntests:\n  - id: t\n    examples: {DEEP}\n")
    (pytester.path / "x.jsonl").write_text("")  # the spec's file must exist (checked first)
    result = pytester.runpytest("--vl-model=scores:x.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED and no_traceback(result)
    result.stdout.fnmatch_lines([f"*deep.yaml:4: {TOO_DEEP}"])
    pytester.makefile(".yaml", deep="vlcheck: 1\ntests:\n" + "  " + "- " * 70 + "x\n")
    result = pytester.runpytest("--vl-model=scores:x.jsonl")
    assert no_traceback(result)
    result.stdout.fnmatch_lines([f"*deep.yaml:3: {TOO_DEEP}"])


def test_jsonl_examples_and_scores_nested_too_deep(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        checks="vlcheck: 1\ntests:\n  - id: t\n    capability: a/b\n    task: caption\n"
        "    threshold: 0.5\n    examples: examples.jsonl\n",
    )
    good = '{"image": "a.png", "caption": "c", "negatives": ["n"]}'
    (pytester.path / "examples.jsonl").write_text(f'{good}\n{{"x": {DEEP}}}\n')
    (pytester.path / "s.jsonl").write_text("")  # the spec's file must exist (checked first)
    result = pytester.runpytest("--vl-model=scores:s.jsonl")
    assert no_traceback(result)
    result.stdout.fnmatch_lines([f"*examples.jsonl:2: {TOO_DEEP}"])
    (pytester.path / "examples.jsonl").write_text(good + "\n")
    record = '{"image": "a.png", "text": "c", "score": 0.5}'
    (pytester.path / "s.jsonl").write_text(f"{record}\n\n{DEEP}\n")
    result = pytester.runpytest("--vl-model=scores:s.jsonl")
    assert no_traceback(result)
    result.stdout.fnmatch_lines([f"*s.jsonl:3: {TOO_DEEP}*"])


def _report_folder(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".yaml", gates=checklist({"spatial": 50}))
    scores(pytester.path / "s.jsonl", {"spatial": set()})
    pytester.runpytest("--vl-model=scores:s.jsonl", "--vl-report=rep").assert_outcomes(passed=1)
    return pytester.path / "rep"


def test_vlcheck_commands_refuse_deep_reports(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    rep = _report_folder(pytester)
    (rep / "manifest.json").unlink()  # edited by hand below: read file by file, as before
    matrix = rep / "matrix.json"
    good = matrix.read_text()
    matrix.write_text('{"vlcheck_report": 1,\n\n "results": ' + DEEP + "}")
    capsys.readouterr()
    for argv in (["report", str(matrix)], ["compare", str(rep), str(rep)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{matrix}:3: {TOO_DEEP}" in err and err.count("\n") == 1
    matrix.write_text(good)
    samples = rep / "samples.jsonl"
    samples.write_text(samples.read_text().splitlines()[0] + "\n" + DEEP + "\n")
    assert main(["compare", str(rep), str(rep)]) == 2
    err = capsys.readouterr().err
    assert f"{samples}:2: {TOO_DEEP}" in err and err.count("\n") == 1
    samples.unlink()
    matrix.write_text(DEEP)
    assert main(["merge", str(rep), str(rep), "-o", str(pytester.path / "merged")]) == 2
    assert f"{matrix}:1: {TOO_DEEP}" in capsys.readouterr().err
    assert not (pytester.path / "merged").exists()


def test_the_vlcheck_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "matrix.json"
    deep.write_text(DEEP)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vlcheck.cli", "report", str(deep)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(f"{deep}:1: {TOO_DEEP}")
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["audit", "x.yaml", "--margin", "nan"], "argument --margin: is nan; expected a finite"),
        (["audit", "x.yaml", "--batch-size", "0"], "argument --batch-size: is 0; expected a whole"),
        (
            ["validate", "x.yaml", "--max-image-pixels", DIGITS],
            f"argument --max-image-pixels: is '{'9' * 20}...' (400 characters); expected a "
            "whole number from 1 to 2**40",
        ),
        (["render", "x.yaml", "-o", "out", "--limit", "0"], "argument --limit: is 0; expected"),
    ],
)
def test_vlcheck_number_options_are_bounded(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
