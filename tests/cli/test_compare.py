"""``vlcheck compare`` and ``vlcheck baseline prune`` through the command's entry point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_vlcheck.cli import main
from pytest_vlcheck.gates.baseline import Baseline, make_entry
from pytest_vlcheck.report import write_report
from pytest_vlcheck.report.svg import line_chart
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ModelMeta
from pytest_vlcheck.results.samples import SampleRow, write_samples

FILE = "checklists/a.yaml"
TESTS = {"color": "attribute/color", "count": "counting/number"}


def typed(rows: list[dict]) -> list[CapabilityResult]:
    """Result rows (``to_json`` form) as the results the report functions take."""
    return [CapabilityResult.from_json(row) for row in rows]


def result(test: str, model: str, outcomes: dict[str, bool]) -> dict:
    n, passed = len(outcomes), sum(outcomes.values())
    return {
        "file": FILE,
        "test": test,
        "capability": TESTS[test],
        "task": "caption",
        "model": model,
        "n": n,
        "passed": passed,
        "pass_rate": passed / n,
        "ci_low": 0.0,
        "ci_high": 1.0,
        "threshold": 0.5,
        "chance": 0.5,
        "status": "passed" if passed / n >= 0.5 else "failed",
    }


def outcomes(n: int, correct: int) -> dict[str, bool]:
    return {f"e{i:02d}": i < correct for i in range(n)}


def write_run(folder: Path, model: str, correct: dict[str, int]) -> Path:
    """A report folder with matrix.json and samples.jsonl: 60 examples per test."""
    per_test = {test: outcomes(60, c) for test, c in correct.items()}
    results = [result(test, model, o) for test, o in per_test.items()]
    write_report(folder, [ModelMeta(model, "py:x:y", None)], typed(results))
    rows = [
        SampleRow(FILE, test, model, example, ok, False, ((0.3, 0.2),))
        for test, o in per_test.items()
        for example, ok in o.items()
    ]
    write_samples(folder / "samples.jsonl", rows)
    return folder


def test_compare_two_runs_prints_deltas_and_paired_p(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "ckpt-1000", "ckpt-1000", {"color": 40, "count": 30})
    b = write_run(tmp_path / "ckpt-1200", "ckpt-1200", {"color": 30, "count": 33})
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    # color: 10 examples lost, none gained: mid-p 2**-10 = 0.00098; count: 3 gained: 2**-3
    # Holm over 2: 0.00098 * 2 = 0.002; 0.125 * 1 = 0.125
    # marks: mid-p < 0.05 / 2 and more than 2 points: color's drop is marked, count's not
    assert "attribute/color  66.7%      50.0% -16.7 pts▼, p 0.00098, Holm 0.002" in out
    assert "counting/number  50.0%      55.0% +5.0 pts, p 0.12, Holm 0.12" in out
    assert "▼/▲: p < alpha/m = 0.05/2 and a change of more than 2 pts" in out
    md = (tmp_path / "out" / "compare.md").read_text()
    assert "| attribute/color | 66.7% | 50.0% -16.7 pts▼, p 0.00098, Holm 0.002 |" in md
    html = (tmp_path / "out" / "compare.html").read_text()
    assert "<table>" in html and "line-chart" not in html  # no curve for two runs


def test_compare_three_runs_draws_capability_curves(tmp_path: Path) -> None:
    runs = [
        write_run(tmp_path / f"ckpt-{k}", f"ckpt-{k}", {"color": c, "count": 30})
        for k, c in ((1, 20), (2, 40), (3, 50))
    ]
    assert main(["compare", *map(str, runs), "-o", str(tmp_path / "out")]) == 0
    html = (tmp_path / "out" / "compare.html").read_text()
    # small multiples: one chart per capability group (attribute, counting), each with its
    # capabilities' curves and their thresholds
    charts = html.split('<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart"')[1:]
    assert len(charts) == 2
    first = charts[0][: charts[0].index("</svg>")]
    assert "<title>Pass rate: attribute</title>" in first
    assert first.count("<polyline") == 1
    assert "attribute/color, ckpt-3: 83.3%" in first  # 50 / 60
    assert "attribute/color threshold 50.0%" in first
    assert "<script" not in html and "http" not in html.replace("http://www.w3.org", "")


def test_compare_reads_matrix_json_and_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", "tiny", {"color": 40, "count": 30})
    entries = [
        make_entry(
            result(t, "tiny-init", outcomes(60, 20)),
            outcomes(60, 20),
            spec="tiny",
            fingerprint=None,
            content_hash="h",
            conditions={},
        )
        for t in TESTS
    ]
    Baseline(tuple(entries)).dump(tmp_path / "base.json")
    code = main(["compare", str(tmp_path / "base.json"), str(run / "matrix.json")])
    assert code == 0
    out = capsys.readouterr().out
    # color: 20 gained, none lost: mid-p 2**-20 = 9.5e-07; Holm * 2 = 1.9e-06
    assert re.search(r"attribute/color\s+33.3%\s+66.7% \+33.3 pts▲, p 9.5e-07, Holm 1.9e-06", out)
    assert out.splitlines()[0].split() == ["capability", "base", "run"]


def test_compare_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", "tiny", {"color": 40})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"vlcheck_baseline": 7, "entries": []}))
    cases = {
        str(tmp_path / "nope"): "no such file or folder",
        str(bad): "baseline format 7 was written by a newer pytest-vlcheck",
        str(tmp_path): "no matrix.json in this folder",
    }
    for arg, message in cases.items():
        assert main(["compare", str(run), arg]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and err.startswith("vlcheck compare: ")
    assert main(["compare", str(run)]) == 2


def test_line_chart_skips_missing_points() -> None:
    svg = line_chart(["a", "b", "c"], [("x", [0.5, None, 1.0]), ("y", [None, 0.25, None])], "t")
    assert svg.count("<circle") == 3 and svg.count("<polyline") == 1
    # x: from (48, 140) to (736, 20): plot height 240 from y=20, width 688 from x=48
    assert 'points="48.0,140.0 736.0,20.0"' in svg


def test_baseline_prune_drops_entries_of_missing_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "checklists").mkdir()
    (tmp_path / FILE).write_text(
        "vlcheck: 1\ntests:\n  - id: color\n    capability: attribute/color\n"
        "    task: caption\n    threshold: 0.5\n    examples:\n"
        "      - {image: a.png, caption: a cat, negatives: [a dog]}\n"
    )
    entries = [
        make_entry(
            {**result("color", "tiny", outcomes(2, 1)), "file": file, "test": test},
            {},
            spec="tiny",
            fingerprint=None,
            content_hash="h",
            conditions={},
        )
        for file, test in ((FILE, "color"), (FILE, "count"), ("gone.yaml", "color"))
    ]
    path = tmp_path / "base.json"
    Baseline(tuple(entries)).dump(path)
    args = ["baseline", "prune", str(path), "--root", str(tmp_path)]
    assert main([*args, "--dry-run"]) == 0
    assert len(Baseline.load(path).entries) == 3
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "stale: checklists/a.yaml::count[tiny]" in out and "stale: gone.yaml::color[tiny]" in out
    assert Baseline.load(path).keys() == [(FILE, "color", "tiny")]
    assert main(["baseline", "prune", str(tmp_path / "x.json")]) == 2


def test_compare_marks_what_the_gate_fails_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule: a large drop that is not significant at alpha / m is not marked (the gate
    passes it), a significant one beyond --max-drop is (the gate fails it)."""
    from pytest_vlcheck.gates.decision import gate
    from pytest_vlcheck.gates.wording import gate_verdict

    base = {"color": 40, "count": 40}
    a = write_run(tmp_path / "a", "a", base)
    b_correct = {"color": 30, "count": 36}
    b = write_run(tmp_path / "b", "b", b_correct)
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    # color: 10 lost, mid-p 2**-10 < 0.025: marked; count: 4 lost (-6.7 pts), mid-p 2**-4 =
    # 0.0625 >= 0.025: a large drop, not significant: not marked
    assert "-16.7 pts▼" in out and "-6.7 pts," in out and "-6.7 pts▼" not in out
    for test, verdict in (("color", "regressed: "), ("count", "dropped 6.7 pts, not significant")):
        before, after = outcomes(60, base[test]), outcomes(60, b_correct[test])
        row = result(test, "a", before)
        entry = make_entry(row, before, spec="py:x:y", fingerprint=None, content_hash="h",
                           conditions={})  # fmt: skip
        g = gate(after, sum(after.values()) / 60, entry, m=2, alpha=0.05, max_drop_pts=2.0)
        assert gate_verdict(g).startswith(verdict)
    assert main(["compare", str(a), str(b), "--max-drop", "20"]) == 0
    assert "▼" not in capsys.readouterr().out.split("Reference:")[0]
    with pytest.raises(SystemExit) as exited:
        main(["compare", str(a), str(b), "--alpha", "nan"])
    assert exited.value.code == 2
    assert "--alpha: is nan; expected a finite number in (0, 1)" in capsys.readouterr().err


def test_compare_rounds_a_delta_as_the_gate_does_and_colours_its_marks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """41.25% -> 27.5%: 100 * (0.275 - 0.4125) is -13.749999999999998 in floats; the gate
    prints "dropped 13.8 pts", so compare prints -13.8 (the value rounded to 9 decimals,
    then half away from zero)."""
    from pytest_vlcheck.gates.decision import gate
    from pytest_vlcheck.gates.wording import gate_verdict

    a = write_run(tmp_path / "a", "a", {"color": 33})
    b = write_run(tmp_path / "b", "b", {"color": 22})
    for folder, correct in ((a, 33), (b, 22)):  # 80 examples: 33/80 = 41.25%, 22/80 = 27.5%
        results = [result("color", folder.name, outcomes(80, correct))]
        write_report(folder, [ModelMeta(folder.name, "py:x:y", None)], typed(results))
        rows = [
            SampleRow(FILE, "color", folder.name, e, ok, False, ((0.3, 0.2),))
            for e, ok in outcomes(80, correct).items()
        ]
        write_samples(folder / "samples.jsonl", rows)
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "27.5% -13.8 pts▼" in out
    before, after = outcomes(80, 33), outcomes(80, 22)
    entry = make_entry(result("color", "a", before), before, spec="py:x:y", fingerprint=None,
                       content_hash="h", conditions={})  # fmt: skip
    verdict = gate_verdict(gate(after, 22 / 80, entry, m=1, alpha=0.05, max_drop_pts=2.0))
    assert verdict.startswith("regressed: dropped 13.8 pts")
    html = (tmp_path / "out" / "compare.html").read_text()
    assert '-13.8 pts<span class="delta-drop">▼</span>' in html
    assert ".delta-drop { color: #b91c1c" in html
