"""pytest_vlcheck.report: the matrix.json contract, md/csv/terminal/html views, atomic writes."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_vlcheck import atomic, fmt
from pytest_vlcheck.atomic import atomic_write_bytes, atomic_write_text
from pytest_vlcheck.report import (
    REPORT_FILES,
    ReportFormatError,
    format_matrix,
    matrix_document,
    read_matrix,
    render_files,
    write_report,
)
from pytest_vlcheck.report.csv_report import render_csv
from pytest_vlcheck.report.html import render_html, true_marks
from pytest_vlcheck.report.markdown import escape_md, render_markdown
from pytest_vlcheck.report.matrix import build_matrix
from pytest_vlcheck.report.sections import build_report
from pytest_vlcheck.report.svg import bar_chart, pooled_rate, radar_axes, radar_chart
from pytest_vlcheck.report.terminal import cell_text
from pytest_vlcheck.results import CapabilityResult, FailureExample
from pytest_vlcheck.results.run_meta import ModelMeta

EVIL = '<b>&"'

MODELS = [
    ModelMeta("clip", "clip", "f00d"),
    ModelMeta("sig|lip", "hf:google/siglip-base-patch16-224", None),
]


def typed(rows: list[dict]) -> list[CapabilityResult]:
    """Result rows (``to_json`` form) as the results the report functions take."""
    return [CapabilityResult.from_json(row) for row in rows]


def result(model: str, test: str, capability: str, n: int, passed: int, status: str, **kw):
    """A result row as the engine would hand it over (``to_json`` form)."""
    values = {
        "file": "checklists/basic.yaml",
        "task": "caption",
        "pass_rate": passed / n if n else 0.0,
        "ci_low": 0.0,
        "ci_high": 0.0,
        "threshold": 0.75,
        "chance": 0.5,
    }
    values.update(kw)
    return CapabilityResult(
        test=test, capability=capability, model=model, n=n, passed=passed, status=status, **values
    ).to_json()


def sample_results() -> list[dict]:
    return [
        result(
            "clip",
            "color",
            "attribute/color",
            400,
            245,
            "failed",
            ci_low=0.5637,
            ci_high=0.6591,
            metrics={"text_score": 0.6125},
            slices={"size": {"small": {"n": 10, "passed": 5, "pass_rate": 0.5}}},
            failures=[
                FailureExample(
                    id="ex-1",
                    images=[f"img/{EVIL}.jpg"],
                    texts=[f"a red apple {EVIL}", "a green apple"],
                    scores=[[0.21, 0.25]],
                    detail="negative wins",
                )
            ],
        ),
        result(
            "sig|lip",
            "color",
            "attribute/color",
            400,
            348,
            "passed",
            ci_low=0.8329,
            ci_high=0.9,
            metrics={"text_score": 0.87, "image_score": 0.5},
            slices={"size": {"small": {"n": 10, "passed": 9, "pass_rate": 0.9}}},
        ),
        result(
            "clip",
            "spatial",
            "relation/spatial",
            100,
            80,
            "passed",
            task="group",
            ci_low=0.711,
            ci_high=0.8666,
            threshold=0.6,
            chance=0.25,
            criterion="group",
        ),
        result(
            "sig|lip",
            "spatial",
            "relation/spatial",
            0,
            0,
            "error",
            task="group",
            threshold=0.6,
            chance=0.25,
        ),
        result("clip", "size", "object/size", 0, 0, "skipped", unscored={"missing image": 3}),
        result("sig|lip", "size", "object/size", 50, 40, "passed", ci_low=0.67, ci_high=0.89),
        result(
            "clip",
            "color-image",
            "attribute/color",
            20,
            19,
            "passed",
            task="image",
            ci_low=0.7639,
            ci_high=0.9911,
            threshold=0.5,
        ),
        result(
            "sig|lip",
            "color-image",
            "attribute/color",
            20,
            9,
            "failed",
            task="image",
            ci_low=0.2582,
            ci_high=0.6579,
            threshold=0.5,
        ),
    ]


class BalanceChecker(HTMLParser):
    """Tag balance and external references: the substitute for a browser screenshot."""

    VOID = frozenset({"br", "meta", "img", "hr", "input", "link", "wbr", "col"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.counts: dict[str, int] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        for key, value in attrs:
            if key in ("src", "href") and not (value or "").startswith("#"):
                self.problems.append(f"external reference {key}={value}")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unbalanced </{tag}> at {self.getpos()}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


# --- fmt ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.6125, "61.3%"),  # half-up on the decimal text, not the binary float below it
        (0.61249, "61.2%"),
        (1.0, "100.0%"),
        (1, "100.0%"),
        (0, "0.0%"),
        (-0.0, "0.0%"),
        (-0.0001, "0.0%"),
        (0.00049, "0.0%"),
        (0.00051, "0.1%"),
        (None, "n/a"),
        (math.nan, "n/a"),
        (math.inf, "n/a"),
    ],
)
def test_pct(value, text):
    assert fmt.pct(value) == text


def test_plural_and_article():
    assert [fmt.plural(n, "test") for n in (0, 1, 2)] == ["0 tests", "1 test", "2 tests"]
    assert fmt.plural(1, "entry", "entries") == "1 entry"
    assert fmt.plural(3, "entry", "entries") == "3 entries"
    assert fmt.with_article("OrderedDict") == "an OrderedDict"
    assert fmt.with_article("dict") == "a dict"


def test_ci_value_truncate_label():
    assert fmt.ci(0.5637, 0.6591) == "56.4-65.9"
    assert fmt.ci(None, 0.5) == "n/a"
    assert fmt.value(0.61255) == "0.6126"
    assert fmt.value(3) == "3"
    assert fmt.value(1.0) == "1.0000"
    assert fmt.truncate("abcdef", 4) == "abc…"
    assert fmt.truncate("abcd", 4) == "abcd"
    assert fmt.label("attribute/color", " (color2)", 24) == "attribute/color (color2)"
    assert fmt.label("attribute/color", " (color2)", 20) == "attribute/… (color2)"
    assert fmt.label("attribute/color", " (color2)", 12) == "attribute/c…"


# --- atomic writes ------------------------------------------------------------------------


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_creates_and_replaces(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_text(target, "first\n")
    atomic_write_text(target, "second\r\nline é\n")
    assert target.read_bytes() == "second\r\nline é\n".encode()
    atomic_write_bytes(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("failing", ["fsync", "replace", "write"])
def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch, failing):
    target = tmp_path / "baseline.json"
    target.write_text("old content")
    seen_temp: list[Path] = []

    def boom(*args, **kwargs):
        seen_temp.extend(p for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
        raise OSError(f"simulated {failing} failure")

    if failing == "write":
        real_write = Path.write_bytes

        def half_write(self, data):
            """Writes half the bytes, then fails as a full disk would."""
            real_write(self, data[: len(data) // 2])
            boom()

        monkeypatch.setattr(Path, "write_bytes", half_write)
    else:
        monkeypatch.setattr(atomic.os, failing, boom)

    with pytest.raises(OSError, match="simulated"):
        atomic_write_text(target, "new content that must not appear")
    assert seen_temp, "the failure should happen while the temp file exists"
    assert target.read_text() == "old content"
    assert _leftovers(tmp_path) == []


def test_atomic_write_interrupt_removes_temp(tmp_path, monkeypatch):
    target = tmp_path / "cache.bin"

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, b"data")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_atomic_write_permissions(tmp_path):
    old_umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.txt"
        atomic_write_text(fresh, "x")
        assert fresh.stat().st_mode & 0o777 == 0o644  # umask applies, unlike mkstemp's 0600
        kept = tmp_path / "kept.txt"
        kept.write_text("x")
        kept.chmod(0o640)
        atomic_write_text(kept, "y")
        assert kept.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old_umask)


def test_atomic_write_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")


# --- matrix and matrix.json ---------------------------------------------------------------


def test_rows_labels_and_order():
    results = sample_results()
    results.append(result("clip", "color", "attribute/color", 4, 4, "passed", file="other.yaml"))
    matrix = build_matrix(MODELS, typed(results))
    # grouped by capability (an area's capabilities together), file order within one
    assert [r.label for r in matrix.rows] == [
        "attribute/color (checklists/basic.yaml::color)",
        "attribute/color (color-image)",
        "attribute/color (other.yaml::color)",
        "relation/spatial",
        "object/size",
    ]
    assert matrix.model_names == ["clip", "sig|lip"]
    assert set(matrix.rows[0].cells) == {"clip", "sig|lip"}
    assert matrix.rows[3].shared("threshold") == 0.6


def test_displayed_rows_group_capabilities_and_matrix_json_keeps_run_order(tmp_path):
    rows = [
        result("clip", "a", "object/existence", 10, 9, "passed"),
        result("clip", "b", "attribute/color", 10, 9, "passed"),
        result("clip", "c", "object/size", 10, 9, "passed", file="b.yaml"),
        result("clip", "d", "object/existence", 10, 9, "passed", file="b.yaml"),
        result("clip", "e", "attribute/color", 10, 9, "passed", file="c.yaml"),
    ]
    paths = write_report(tmp_path, MODELS[:1], typed(rows))
    md = paths[1].read_text(encoding="utf-8")
    table = [line.split(" | ")[0] for line in md.split("## Matrix")[1].splitlines()[4:9]]
    assert table == [
        "| object/existence (a)",
        "| object/existence (d)",
        "| object/size",
        "| attribute/color (b)",
        "| attribute/color (e)",
    ]
    html = paths[3].read_text(encoding="utf-8")
    positions = [html.index(f"::{test}</code>") for test in "adcbe"]
    assert positions == sorted(positions)
    assert [r["test"] for r in json.loads(paths[0].read_text())["results"]] == list("abcde")


def test_matrix_document_contract():
    results = sample_results()
    results[0]["metrics"]["nan_metric"] = math.nan
    doc = matrix_document(MODELS, typed(results))
    assert list(doc) == ["vlcheck_report", "models", "results", "errors", "summary"]
    assert doc["errors"] == []
    assert doc["vlcheck_report"] == 1
    assert doc["models"] == [m.to_json() for m in MODELS]
    assert doc["results"][0]["pass_rate"] == 0.6125  # full precision, no rounding
    assert doc["results"][0]["ci_low"] == 0.5637
    assert doc["results"][0]["metrics"]["nan_metric"] is None  # strict JSON has no NaN
    assert math.isnan(results[0]["metrics"]["nan_metric"])  # input untouched
    assert doc["summary"] == {
        "clip": {
            "passed": 2,
            "failed": 1,
            "error": 0,
            "skipped": 1,
            "xfailed": 0,
            "xpassed": 0,
            "total": 4,
        },
        "sig|lip": {
            "passed": 2,
            "failed": 1,
            "error": 1,
            "skipped": 0,
            "xfailed": 0,
            "xpassed": 0,
            "total": 4,
        },
    }
    json.dumps(doc, allow_nan=False)


def test_write_report_round_trip_is_byte_identical(tmp_path):
    paths = write_report(tmp_path / "out" / "nested", MODELS, typed(sample_results()))
    assert [p.name for p in paths] == list(REPORT_FILES)
    assert all(p.is_file() for p in paths)
    assert _leftovers(paths[0].parent) == []
    models, results = read_matrix(paths[0])
    assert models == MODELS
    assert results == typed(sample_results())
    rerendered = render_files(models, results)
    for path in paths:
        assert rerendered[path.name] == path.read_text(encoding="utf-8"), path.name
    assert render_files(MODELS, typed(sample_results())) == rerendered  # deterministic


def test_read_matrix_fills_optional_fields(tmp_path):
    row = {
        k: v
        for k, v in sample_results()[2].items()
        if k not in ("criterion", "metrics", "slices", "failures", "unscored", "chance")
    }
    path = tmp_path / "matrix.json"
    doc = {"vlcheck_report": 1, "models": [{"name": "clip"}], "results": [row]}
    path.write_text(json.dumps(doc))
    models, results = read_matrix(path)
    assert models == [ModelMeta("clip", "", None)]
    assert results[0].metrics == {} and results[0].failures == []
    assert results[0].chance is None and results[0].criterion == ""
    render_files(models, results)


def _doc(**changes):
    models = [m.to_json() for m in MODELS]
    doc = {"vlcheck_report": 1, "models": models, "results": sample_results()}
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([1, 2], "not a vlcheck report"),
        (_doc(vlcheck_report=2), "unsupported report version 2"),
        (_doc(vlcheck_report=True), "unsupported report version True"),
        ({"vlcheck_report": 1, "models": []}, "missing key 'results'"),
        (_doc(models=[{"spec": "x"}]), "models[0]: missing key 'name'"),
        (
            _doc(models=[m.to_json() for m in [*MODELS, MODELS[0]]]),
            "models[2].name: duplicate model name 'clip'",
        ),
        (_doc(results=[{**sample_results()[0], "status": "xfail"}]), "results[0].status"),
        (_doc(results=[{**sample_results()[0], "n": -1}]), "results[0].n: expected a non-negative"),
        (_doc(results=[{**sample_results()[0], "pass_rate": "high"}]), "results[0].pass_rate"),
        (_doc(results=[{**sample_results()[0], "model": "gpt"}]), "model 'gpt' is not listed"),
        (_doc(results=sample_results()[:1] * 2), "duplicate result for"),
        (
            _doc(results=[{**sample_results()[0], "slices": {"size": {"s": {"n": 1}}}}]),
            "results[0].slices['size']['s']: missing key 'passed'",
        ),
    ],
)
def test_read_matrix_rejects_bad_documents(tmp_path, doc, message):
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ReportFormatError) as info:
        read_matrix(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_read_matrix_bad_json_and_missing_file(tmp_path):
    path = tmp_path / "matrix.json"
    path.write_text('{"vlcheck_report": 1,\n "models": [}\n')
    with pytest.raises(ReportFormatError, match=r"matrix\.json:2: invalid JSON"):
        read_matrix(path)
    with pytest.raises(ReportFormatError, match="no such file"):
        read_matrix(tmp_path / "absent.json")


def test_write_report_render_error_keeps_old_report(tmp_path):
    write_report(tmp_path, MODELS, typed(sample_results()))
    before = {name: (tmp_path / name).read_bytes() for name in REPORT_FILES}
    bad = typed(sample_results())
    bad[0] = dataclasses.replace(bad[0], status="exploded")
    with pytest.raises(ReportFormatError, match=r"results\[0\]\.status"):
        write_report(tmp_path, MODELS, bad)
    assert {name: (tmp_path / name).read_bytes() for name in REPORT_FILES} == before


# --- terminal -----------------------------------------------------------------------------


def _cell(row: dict):
    """The report model's cell of a single result row."""
    return build_report(MODELS, typed([row])).sections[0].cells[0]


def test_cell_text():
    rows = sample_results()
    assert cell_text(_cell(rows[0])) == " 61.3% ✗ (n=400)"
    assert cell_text(_cell(rows[1]), with_n=False) == " 87.0% ✓"
    assert cell_text(_cell(rows[3])) == "ERROR"
    assert cell_text(_cell(rows[4])) == "skip*"  # 3 examples left unscored
    assert cell_text(None) == "-"
    assert cell_text(_cell(result("clip", "t", "c", 1, 1, "passed"))) == "100.0% ✓ (n=1)"


def test_format_matrix_full_width():
    lines = format_matrix(build_report(MODELS, typed(sample_results())))
    assert lines == [
        "capability                     threshold  clip              sig|lip",
        "-----------------------------  ---------  ----------------  ----------------",
        "attribute/color (color)        75.0%       61.3% ✗ (n=400)   87.0% ✓ (n=400)",
        "attribute/color (color-image)  50.0%       95.0% ✓ (n=20)    45.0% ✗ (n=20)",
        "relation/spatial               60.0%       80.0% ✓ (n=100)  ERROR",
        "object/size                    75.0%      skip*              80.0% ✓ (n=50)",
        "",
        "clip: 2 passed, 1 failed, 0 error, 1 skipped",
        "sig|lip: 2 passed, 1 failed, 1 error, 0 skipped",
        "marks: ✓ reached its threshold, ✗ below its threshold",
        "* object/size [clip]: 3 example(s) unscored (missing image: 3; --vl-missing=skip)",
    ]


@pytest.mark.parametrize("width", [72, 60, 50])
def test_format_matrix_fits_width(width):
    lines = format_matrix(build_report(MODELS, typed(sample_results())), width=width)
    table = lines[: lines.index("")]
    assert all(len(line) <= width for line in table), table
    assert "(n=" not in "".join(table)  # dropped first
    assert table[2].split("  ")[0].startswith("attribute/")
    assert any("…" in line for line in table) == (width < 58)


def test_format_matrix_empty_and_unshared_threshold():
    assert format_matrix(build_report(MODELS, [])) == []
    rows = [
        result("clip", "t", "object/size", 10, 5, "failed", threshold=0.6),
        result("sig|lip", "t", "object/size", 10, 9, "passed", threshold=0.8),
    ]
    lines = format_matrix(build_report(MODELS, typed(rows)))
    assert "threshold" not in lines[0]
    assert lines[2] == "object/size   50.0% ✗ (n=10)   90.0% ✓ (n=10)"


# --- markdown and csv ---------------------------------------------------------------------


def small_case() -> tuple[list[ModelMeta], list[CapabilityResult]]:
    models = [ModelMeta("clip", "clip", "f00d")]
    results = [
        result(
            "clip",
            "color",
            "attribute/color",
            400,
            245,
            "failed",
            ci_low=0.5637,
            ci_high=0.6591,
            metrics={"text_score": 0.6125},
            slices={
                "size": {
                    "small": {"n": 10, "passed": 5, "pass_rate": 0.5},
                    "large": {"n": 6, "passed": 6, "pass_rate": 1.0},
                }
            },
        ),
        result("clip", "size_1", "object/size", 0, 0, "skipped", metrics={"gap": -0.05}),
    ]
    return models, typed(results)


def test_markdown_exact():
    assert render_markdown(build_report(*small_case())).splitlines() == [
        "# vlcheck capability matrix",
        "",
        "## Models",
        "",
        "| model | spec | fingerprint | passed | failed | error | skipped |",
        "|---|---|---|---|---|---|---|",
        "| clip | clip | f00d | 0 | 1 | 0 | 1 |",
        "",
        "## Matrix",
        "",
        "| capability | test | threshold | clip |",
        "|---|---|---|---|",
        "| attribute/color | checklists/basic.yaml::color | 75.0% | 61.3% ✗ (n=400) |",
        "| object/size | checklists/basic.yaml::size\\_1 | 75.0% | skip |",
        "",
        "marks: ✗ below its threshold.",
        "",
        "## Tests",
        "",
        "### attribute/color",
        "",
        "test checklists/basic.yaml::color, task caption, chance 50.0%",
        "",
        "| model | status | n | passed | pass rate | 95% CI | threshold | unscored |",
        "|---|---|---|---|---|---|---|---|",
        "| clip | failed | 400 | 245 | 61.3% | 56.4-65.9 | 75.0% | - |",
        "",
        "Metrics:",
        "",
        "| metric | clip |",
        "|---|---|",
        "| text\\_score | 0.6125 |",
        "",
        "Slice by size:",
        "",
        "| size | clip |",
        "|---|---|",
        "| small | 50.0% (5/10) |",
        "| large | 100.0% (6/6) |",
        "",
        "### object/size",
        "",
        "test checklists/basic.yaml::size\\_1, task caption, chance 50.0%",
        "",
        "| model | status | n | passed | pass rate | 95% CI | threshold | unscored |",
        "|---|---|---|---|---|---|---|---|",
        "| clip | skipped | 0 | 0 | n/a | n/a | 75.0% | - |",
        "",
        "Metrics:",
        "",
        "| metric | clip |",
        "|---|---|",
        "| gap | -0.0500 |",
    ]


def test_markdown_escapes_table_syntax():
    assert escape_md(f"a|b {EVIL}\nnext") == 'a\\|b \\<b\\>\\&" next'
    text = render_markdown(build_report(MODELS, typed(sample_results())))
    assert "| sig\\|lip |" in text
    assert "<b>" not in text


def test_csv_exact_and_metric_union():
    assert render_csv(build_report(*small_case())).splitlines() == [
        "file,test,capability,task,model,status,criterion,n,passed,pass_rate,ci_low,ci_high,"
        "ci_low_clustered,ci_high_clustered,design_effect,threshold,chance,ties,reordered_share,"
        "unscored,baseline_model,baseline_delta_pts,baseline_p_corrected,"
        "reference_model,reference_delta_pts,reference_p_holm,metric.gap,metric.text_score",
        "checklists/basic.yaml,color,attribute/color,caption,clip,failed,,400,245,0.6125,0.5637,"
        "0.6591,,,,0.75,0.5,0,,0,,,,,,,,0.6125",
        "checklists/basic.yaml,size_1,object/size,caption,clip,skipped,,0,0,0.0,0.0,0.0,,,,0.75,"
        "0.5,0,,0,,,,,,,-0.05,",
    ]
    header = render_csv(build_report(MODELS, typed(sample_results()))).splitlines()[0].split(",")
    assert header[-2:] == ["metric.image_score", "metric.text_score"]


def test_csv_quotes_special_characters():
    rows = [result("clip", 'a,"b"', "object/size", 1, 1, "passed", criterion="x\ny")]
    text = render_csv(build_report(MODELS, typed(rows)))
    assert '"a,""b"""' in text and '"x\ny"' in text


# --- html ---------------------------------------------------------------------------------


def test_html_is_balanced_escaped_and_self_contained():
    html = render_html(build_report(MODELS, typed(sample_results())))
    checker = BalanceChecker()
    checker.feed(html)
    checker.close()
    assert checker.problems == []
    assert checker.stack == []
    assert "<script" not in html
    assert EVIL not in html  # never unescaped
    assert "a red apple &lt;b&gt;&amp;&quot;" in html
    text = "".join(checker.text)
    assert f"a red apple {EVIL}" in text  # ... but reads correctly once parsed
    assert f"img/{EVIL}.jpg" in text
    assert checker.counts["svg"] == 3  # one bar chart per model + the radar
    assert checker.counts["details"] == 1  # only the result that carries failure examples
    assert "clip: 1 of 155 failing examples shown (the test failed)" in text
    assert "✓ a red apple" in text  # the true caption is marked
    assert "missing image: 3" in text


def test_html_bar_chart_geometry():
    matrix = build_matrix(MODELS, typed([result("clip", "t", "object/size", 10, 5, "failed")]))
    svg = bar_chart(matrix, "clip")
    # plot area: x from 250 to 660 (410 px); 50% -> 205 px wide, threshold 75% at x = 557.5
    assert 'width="205.0" height="12"' in svg
    assert 'x1="557.5"' in svg
    assert "5" in svg and "50.0% ✗" in svg
    assert "not run" in bar_chart(matrix, "sig|lip")


def test_radar_pooled_rates_and_axes():
    rows = [
        result("clip", "a", "object/size", 10, 5, "failed"),
        result("clip", "b", "object/size", 30, 27, "passed"),
        result("clip", "c", "attribute/color", 4, 4, "passed"),
        result("clip", "d", "relation/spatial", 0, 0, "error"),
    ]
    matrix = build_matrix(MODELS[:1], typed(rows))
    axes = radar_axes(matrix)
    assert [a.label for a in axes] == ["object/size", "attribute/color", "relation/spatial"]
    assert pooled_rate(axes[0].rows, "clip") == (32 / 40, 32, 40)
    assert pooled_rate(axes[2].rows, "clip") is None  # errors are not zeros
    svg = radar_chart(matrix)
    assert svg is not None and "object/size: 80.0% (32/40)" in svg
    assert radar_chart(build_matrix(MODELS[:1], typed(rows[:3]))) is None  # two axes only
    many = [result("clip", f"t{i}", f"relation/spatial/k{i}", 1, 1, "passed") for i in range(4)]
    merged = radar_axes(build_matrix(MODELS[:1], typed(many)), max_axes=3)
    assert [a.label for a in merged] == ["relation/spatial"]


def test_true_marks_follow_failure_example_convention():
    assert true_marks("caption", 1, 3) == ({0}, set(), {(0, 0)})
    assert true_marks("image", 3, 1) == (set(), {0}, {(0, 0)})
    assert true_marks("group", 2, 2) == (set(), set(), {(0, 0), (1, 1)})
    assert true_marks("match", 1, 1) == (set(), set(), set())


def test_message_is_shown_when_present():
    rows = [result("clip", "t", "object/size", 0, 0, "error")]
    rows[0]["message"] = "scores.jsonl lacks (a.jpg, <x>)"
    files = render_files(MODELS[:1], typed(rows))
    assert "scores.jsonl lacks (a.jpg, &lt;x&gt;)" in files["report.html"]
    assert "- clip: scores.jsonl lacks (a.jpg, \\<x\\>)" in files["matrix.md"]


SCENE_CHECKLIST = """
vlcheck: 1
tests:
  - id: colours
    capability: attribute/color
    task: caption
    threshold: 1.0
    examples:
      - image: {scene: {objects: [{shape: circle, color: red, size: 0.3, position: [0.3, 0.5]},
                                  {shape: star, color: blue, size: 0.2, position: [0.7, 0.5],
                                   texture: striped}]}}
        caption: a red circle
        negatives: [a green circle]
        tags: {kind: plain}
      - image: {scene: {objects: [{shape: square, color: green, size: 0.4, position: [0.5, 0.5]},
                                  {shape: heart, color: red, size: 0.1, position: [0.2, 0.2],
                                   hidden: true}]}}
        caption: a blue square
        negatives: [a green square]
        tags: {kind: plain}
"""


def test_a_failing_scene_test_reads_in_report_html(pytester: pytest.Pytester) -> None:
    """Failures of a failing test are open; scene headers are short labels (the spec is in
    the title); a tag every example shares gets no slice table."""
    from helpers.colour_scorer import SOURCE

    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", scenes=SCENE_CHECKLIST)
    result = pytester.runpytest(
        "scenes.yaml",
        "--vl-model=py:colour_model:make",
        "--vl-report=rep",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(failed=1)
    html = (pytester.path / "rep" / "report.html").read_text()
    assert "<details open>" in html
    headers = re.findall(r"<code>([^<]*)</code></span>", html)
    assert headers and max(len(h) for h in headers) <= 80
    assert "scene: green square" in headers  # the hidden heart is not shown
    assert 'title="scene:{' in html  # the full spec on hover
    assert "Slice by <b>kind</b>" not in html


def test_image_labels_name_what_a_scene_shows() -> None:
    from pytest_vlcheck.images.refs import ImageRef, canonical_scene
    from pytest_vlcheck.report.image_labels import MAX_LABEL, image_label, shorten_scenes

    spec = {
        "objects": [
            {"shape": "star", "color": "blue", "size": 0.2, "position": [0.5, 0.5],
             "texture": "striped", "hollow": True},
            {"shape": "circle", "color": [1, 2, 3], "size": 0.2, "position": [0.2, 0.5]},
        ]
    }  # fmt: skip
    ref = ImageRef("scene", canonical_scene(spec), canonical_scene(spec), (0, 0, 10, 10))
    assert image_label(ref.describe()) == (
        "scene: hollow blue striped star, rgb(1,2,3) circle crop=[0, 0, 10, 10]"
    )
    assert image_label("photos/dog.jpg") == "photos/dog.jpg"
    detail = f"{ref.describe()}: 'a blue star' 0.3100 (first is true)"
    assert shorten_scenes(detail) == (
        "scene: hollow blue striped star, rgb(1,2,3) circle crop=[0, 0, 10, 10]: 'a blue star' "
        "0.3100 (first is true)"
    )
    many = canonical_scene({"objects": [spec["objects"][0]] * 9})
    assert len(image_label("scene:" + many)) == MAX_LABEL


def test_failure_heading_says_how_many_are_shown_and_how_the_test_went():
    example = FailureExample(id="e", images=["a.jpg"], texts=["x", "y"], scores=[[0.1, 0.2]],
                             detail="negative wins")  # fmt: skip
    passed = result("clip", "t", "object/size", 20, 10, "passed", threshold=0.5,
                    failures=[example] * 5)  # fmt: skip
    html = render_html(build_report(MODELS[:1], typed([passed])))
    assert "clip: 5 of 10 failing examples shown (the test passed)</summary>" in html
    one = result("clip", "t", "object/size", 2, 1, "xfailed", failures=[example])
    html = render_html(build_report(MODELS[:1], typed([one])))
    assert "clip: 1 failing example (the test failed, as expected)</summary>" in html
