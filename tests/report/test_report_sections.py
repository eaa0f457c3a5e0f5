"""The report model and its formatters: deltas, run errors, unscored marks, thumbnails, layout."""

from __future__ import annotations

import json
import re

import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.report import (
    ReportFormatError,
    RunError,
    build_report,
    format_matrix,
    matrix_lines,
    read_report,
    render_files,
    write_report,
)
from pytest_vlcheck.report.html import render_html
from pytest_vlcheck.report.markdown import render_markdown
from pytest_vlcheck.report.matrix import build_matrix
from pytest_vlcheck.report.svg import radar_chart
from pytest_vlcheck.results import CapabilityResult, FailureExample
from pytest_vlcheck.results.blocks import GateComparison, ReferenceDelta
from pytest_vlcheck.results.run_meta import ModelMeta
from pytest_vlcheck.run.session import VlcheckSession
from pytest_vlcheck.run.settings import Settings

MODELS = [ModelMeta("old", "py:m:old", "f1"), ModelMeta("new", "py:m:new", None)]


def typed(rows: list[dict]) -> list[CapabilityResult]:
    """Result rows (``to_json`` form) as the results the report functions take."""
    return [CapabilityResult.from_json(row) for row in rows]


def row(model: str, test: str, passed: int, n: int = 60, **kw) -> dict:
    """A measured result row (``to_json`` form) of 60 examples unless told otherwise."""
    values = {
        "file": "checks.yaml",
        "capability": f"object/{test}",
        "task": "caption",
        "pass_rate": passed / n if n else None,
        "ci_low": 0.1,
        "ci_high": 0.9,
        "threshold": 0.5,
        "chance": 0.5,
        "status": "passed" if n and passed / n >= 0.5 else "failed",
    }
    values.update(kw)
    return CapabilityResult(test=test, model=model, n=n, passed=passed, **values).to_json()


def gate_block(delta: float, *, regressed=False, improved=False, p=0.0004) -> GateComparison:
    """A result's ``gate`` as ``decision.apply_gate`` stores it."""
    return GateComparison(
        delta_pts=delta,
        baseline_rate=0.833,
        current_rate=0.633,
        n_matched=60,
        b=12,
        c=0,
        p_mid=p / 2,
        p_corrected=p,
        alpha_corrected=0.025,
        regressed=regressed,
        improved=improved,
        added=0,
        removed=0,
        min_detectable_drop_pts=10.0,
        baseline_model="base",
    )


def reference(delta: float, p_holm: float | None) -> ReferenceDelta:
    return ReferenceDelta("old", delta, p_holm, p_holm, 60, (9, 0))


def delta_rows() -> list[dict]:
    """Test a: 'new' dropped 20 points (gate regressed; reference significant).
    Test b: 'new' gained 5 points, not significant; 'old' gained significantly at the gate."""
    return [
        row("old", "a", 50, gate=gate_block(0.0)),
        row("new", "a", 38, gate=gate_block(-20.0, regressed=True), reference=reference(-20, 0.01)),
        row("old", "b", 30, gate=gate_block(12.5, improved=True, p=0.001)),
        row("new", "b", 33, reference=reference(5.0, 0.3)),
    ]


# --- deltas --------------------------------------------------------------------------------


def test_deltas_in_the_model():
    report = build_report(MODELS, typed(delta_rows()))
    a, b = report.sections
    drop = a.cell("new")
    assert [d.kind for d in drop.deltas] == ["gate", "reference"]
    assert [d.marked for d in drop.deltas] == ["-20.0▼", "-20.0▼"]
    assert drop.significance == "drop"
    assert drop.deltas[0].describe == (
        "gate vs baseline base: regressed: dropped 20.0 pts, significant (McNemar mid-p 0.0002 "
        "< alpha/m 0.025; 12 lost, 0 gained)"
    )
    assert drop.deltas[1].describe == "-20.0 pts vs reference old (Holm p 0.01, significant drop)"
    assert a.cell("old").deltas[0].marked == "0.0" and a.cell("old").significance == ""
    assert b.cell("old").deltas[0].marked == "+12.5▲" and b.cell("old").significance == "gain"
    assert [d.marked for d in b.cell("new").deltas] == ["+5.0"]  # Holm p 0.3: not significant


def test_macro_judged_gate_delta_says_micro():
    rows = [row("old", "a", 50, judged="macro_average", gate=gate_block(-3.0))]
    delta = build_report(MODELS[:1], typed(rows)).sections[0].cells[0].deltas[0]
    assert delta.basis == "micro pass rate"
    assert delta.describe.startswith("gate vs baseline base (micro pass rate): dropped 3.0 pts")


def test_terminal_cells_carry_deltas_and_colours():
    report = build_report(MODELS, typed(delta_rows()))
    lines = format_matrix(report)
    assert lines[2] == (
        "object/a    50.0%       83.3% ✓ (n=60) 0.0      63.3% ✓ (n=60) -20.0▼ -20.0▼"
    )
    assert lines[3] == "object/b    50.0%       50.0% ✓ (n=60) +12.5▲   55.0% ✓ (n=60) +5.0"
    assert lines[-1] == (
        "deltas: points vs the baseline and vs the first model old; ▼ significant drop, "
        "▲ significant gain"
    )
    coloured = matrix_lines(report)
    assert [c for _, c in coloured[2] if c] == ["red"]
    assert [c for _, c in coloured[3] if c] == ["green"]
    assert ["".join(t for t, _ in line) for line in coloured] == lines


def test_markdown_and_html_show_deltas():
    files = render_files(MODELS, typed(delta_rows()))
    md = files["matrix.md"]
    assert (
        "| object/a | checks.yaml::a | 50.0% | 83.3% ✓ (n=60) 0.0 | 63.3% ✓ (n=60) -20.0▼ -20.0▼ |"
        in md
    )
    assert "- new: -20.0 pts vs reference old (Holm p 0.01, significant drop)" in md
    assert "▼ a significant drop, ▲ a significant gain" in md
    html = files["report.html"]
    assert html.count('"cell st-passed sig-drop"') == 1
    assert html.count('"cell st-passed sig-gain"') == 1
    assert '<span class="delta delta-drop"' in html and '<span class="delta delta-gain"' in html
    assert ">+5.0 vs old</span>" in html  # not significant: no colour class
    csv_lines = files["matrix.csv"].splitlines()
    assert csv_lines[2].endswith(",base,-20.0,0.0004,old,-20.0,0.01")
    assert csv_lines[4].endswith(",,,,old,5.0,0.3")


def test_no_deltas_no_legend():
    files = render_files(MODELS, typed([row("old", "a", 50), row("new", "a", 40)]))
    assert "significant drop" not in files["matrix.md"] + files["report.html"]
    assert "deltas:" not in "\n".join(
        format_matrix(build_report(MODELS, typed([row("old", "a", 5)])))
    )


# --- errors ----------------------------------------------------------------------------------

ERRORS = [
    RunError("checklists/bad.yaml", 12, "threshold: expected a number in [0, 1], got 'high'"),
    RunError("checklists/nohead.yaml", None, "not a vlcheck checklist"),
]


def errored_rows() -> list[dict]:
    load = "model 'new' failed to load: py:m:new: No module named 'm'"
    return [row("old", "a", 50), row("new", "a", 0, n=0, status="error", message=load)]


def test_errors_recorded_and_rendered(tmp_path):
    paths = write_report(tmp_path, MODELS, typed(errored_rows()), errors=ERRORS)
    doc = json.loads(paths[0].read_text())
    assert doc["errors"] == [
        {"file": "checklists/bad.yaml", "line": 12, "message": ERRORS[0].message},
        {"file": "checklists/nohead.yaml", "line": None, "message": "not a vlcheck checklist"},
    ]
    md = (tmp_path / "matrix.md").read_text()
    assert md.index("## Errors") < md.index("## Models")
    assert "- checklists/bad.yaml:12: threshold: expected a number in \\[0, 1\\]" in md
    assert "- checklists/nohead.yaml: not a vlcheck checklist" in md
    assert "- checks.yaml::a \\[new\\]: model 'new' failed to load: py:m:new" in md
    html = (tmp_path / "report.html").read_text()
    assert html.index('<div class="errors">') < html.index("<h2>Models</h2>")
    assert "<code>checklists/bad.yaml:12</code>" in html
    assert "model &#x27;new&#x27; failed to load" in html


def test_errors_only_report_says_so(tmp_path):
    files = render_files(MODELS, [], errors=ERRORS[:1])
    assert "checklists/bad.yaml:12" in files["matrix.md"] and "No results." in files["matrix.md"]
    assert "checklists/bad.yaml:12" in files["report.html"]


def test_vlcheck_report_reproduces_errors_byte_for_byte(tmp_path):
    paths = write_report(tmp_path / "a", MODELS, typed(delta_rows()), errors=ERRORS)
    doc = read_report(paths[0])
    assert doc.errors == ERRORS
    again = render_files(doc.models, doc.results, errors=doc.errors)
    for path in paths:
        assert again[path.name] == path.read_text(encoding="utf-8"), path.name


def test_old_report_without_errors_reads(tmp_path):
    path = tmp_path / "matrix.json"
    path.write_text(
        json.dumps({"vlcheck_report": 1, "models": [m.to_json() for m in MODELS], "results": []})
    )
    assert read_report(path).errors == []


@pytest.mark.parametrize(
    ("errors", "message"),
    [
        ("x", "errors: expected a list"),
        ([{"file": "a.yaml", "line": "3", "message": "m"}], "errors[0].line: expected a non-neg"),
        ([{"line": 3, "message": "m"}], "errors[0]: missing key 'file'"),
    ],
)
def test_bad_errors_are_rejected(tmp_path, errors, message):
    path = tmp_path / "matrix.json"
    path.write_text(
        json.dumps({"vlcheck_report": 1, "models": [], "results": [], "errors": errors})
    )
    with pytest.raises(ReportFormatError, match=re.escape(message)):
        read_report(path)


def test_collection_error_messages_are_parsed(tmp_path):
    session = VlcheckSession(Settings(rootdir=tmp_path))
    text = f"{tmp_path}/sub/bad.yaml:4: unknown key 'thresold' (did you mean 'threshold'?)\n"
    text += "sub/bad.yaml:9: examples: expected a non-empty list"
    session.record_collection_error("sub/bad.yaml", text)
    session.record_collection_error("test_x.py", "ImportError ...\nE   No module named 'nope'\n")
    assert session.collection_errors == [
        RunError("sub/bad.yaml", 4, "unknown key 'thresold' (did you mean 'threshold'?)"),
        RunError("sub/bad.yaml", 9, "examples: expected a non-empty list"),
        RunError("test_x.py", None, "No module named 'nope'"),
    ]


GOOD = """\
vlcheck: 1
tests:
  - id: red
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square]}
"""

BAD = """\
vlcheck: 1
tests:
  - id: red
    capability: attribute/color
    task: caption
    threshold: high
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square]}
"""


@pytest.mark.parametrize("keep_going", [False, True])
def test_run_with_collection_errors_writes_them(pytester: pytest.Pytester, keep_going):
    Image.new("RGB", (8, 8), (220, 20, 20)).save(pytester.path / "red.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", good=GOOD, bad=BAD)
    pytester.syspathinsert()
    args = ["--vl-model=py:colour_model:make", "--vl-report=out", "-p", "no:cacheprovider"]
    result = pytester.runpytest(*args, *(["--continue-on-collection-errors"] * keep_going))
    doc = json.loads((pytester.path / "out" / "matrix.json").read_text())
    assert [(e["file"], e["line"]) for e in doc["errors"]] == [("bad.yaml", 6)]
    assert "threshold" in doc["errors"][0]["message"]
    assert len(doc["results"]) == (1 if keep_going else 0)
    md = (pytester.path / "out" / "matrix.md").read_text()
    assert "- bad.yaml:6: " in md
    assert result.ret == 1 if keep_going else result.ret == 2


# --- unscored, thumbnails, layout ------------------------------------------------------------


def test_unscored_counts_in_terminal_and_markdown():
    rows = [row("old", "a", 40, n=50, unscored={"missing image": 10})]
    report = build_report(MODELS[:1], typed(rows))
    lines = format_matrix(report)
    assert lines[2] == "object/a    50.0%       80.0% ✓* (n=50)"
    assert lines[-1] == (
        "* object/a [old]: 10 example(s) unscored (missing image: 10; --vl-missing=skip)"
    )
    md = render_markdown(report)
    assert "80.0% ✓\\* (n=50)" in md and "`--vl-missing=skip`" in md
    assert "10 unscored (missing image: 10)" in render_html(report)


def test_failure_thumbnails_only_with_a_mapping():
    example = FailureExample(
        id="e1",
        images=["red.png", "blue.png"],
        texts=["a red square"],
        scores=[[0.9], [0.95]],
        detail="",
        thumbnails=["ab12.jpg", "cd34.jpg"],
    )
    rows = [row("old", "a", 10, failures=[example])]
    report = build_report(MODELS[:1], typed(rows))
    assert "<img" not in render_html(report)
    html = render_html(report, thumbnails={"ab12.jpg": "data:image/jpeg;base64,AAAA"})
    assert html.count("<img") == 1  # cd34.jpg has no data URI: left out, not broken
    assert '<img src="data:image/jpeg;base64,AAAA" alt="red.png"' in html
    files = render_files(
        MODELS[:1], typed(rows), thumbnails={"ab12.jpg": "data:image/jpeg;base64,AAAA"}
    )
    assert "data:image" in files["report.html"] and "data:image" not in files["matrix.json"]
    assert json.loads(files["matrix.json"])["results"][0]["failures"][0]["thumbnails"] == [
        "ab12.jpg",
        "cd34.jpg",
    ]


def test_slice_tables_side_by_side():
    slices = {
        tag: {v: {"n": 10, "passed": 5, "pass_rate": 0.5} for v in ("x", "y")}
        for tag in ("size", "hue", "place")
    }
    html = render_html(build_report(MODELS[:1], typed([row("old", "a", 30, slices=slices)])))
    block = html[html.index('<div class="slices">') :]
    assert block.count('<div class="slice">') == 3
    assert ".slices { display: flex; flex-wrap: wrap;" in html


def test_radar_ring_labels_sit_outside_the_plot():
    rows = [row("old", t, 60) for t in ("a", "b", "c", "d")]  # 100%: the polygon fills the rings
    svg = radar_chart(build_matrix(MODELS[:1], typed(rows)))
    assert svg is not None
    ring_labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" fill="#6b7280">(\d+)%</text>', svg)
    assert [label for _, label in ring_labels] == ["0", "25", "50", "75", "100"]
    # the plot spans x in [420 - 170, 420 + 170]; the labels end well left of it
    assert all(float(x) + 30 < 250 for x, _ in ring_labels)


def test_a_macro_judged_cell_leads_with_the_macro_average() -> None:
    from pytest_vlcheck.report.sections import Cell
    from pytest_vlcheck.report.terminal import cell_text

    measured = CapabilityResult(
        file="c.yaml", test="t", capability="relation/x", task="caption", model="m", n=100,
        passed=61, pass_rate=0.61, ci_low=0.5, ci_high=0.7, threshold=0.6, chance=0.5,
        status="failed", judged="macro_average", metrics={"macro_average": 0.58},
    )  # fmt: skip
    cell = Cell("m", measured, ())
    assert cell.judged_text == "macro 58.0% (micro 61.0%)"
    assert cell_text(cell).startswith("macro 58.0% (micro 61.0%) ✗ (n=100)")
    assert measured.threshold_met is False and measured.to_json()["threshold_met"] is False
