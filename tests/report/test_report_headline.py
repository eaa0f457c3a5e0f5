"""report.html leads with the verdict: a headline (verdict, counts, models), the failing tests
first, each failing example's scores once, bar labels whole; the matrix tells a threshold miss
(✗) from a gate regression (⇓) and explains its marks."""

from __future__ import annotations

from test_report import MODELS, result, typed
from test_report_sections import gate_block

from pytest_vlcheck.report import build_report, format_matrix
from pytest_vlcheck.report.html import render_html
from pytest_vlcheck.results import FailureExample

LONG = "object/existence (caption_paraphrase_typos_and_more)"


def _rows() -> list[dict]:
    example = FailureExample(
        id="ex-1",
        images=["img/a.jpg"],
        texts=["a red apple", "a green apple"],
        scores=[[0.2125, 0.2575]],
        detail="'a red apple' 0.2125, 'a green apple' 0.2575 (first is true)",
    )
    return [
        result("clip", "fine", "attribute/fine", 10, 10, "passed"),
        result("clip", "long", LONG, 10, 9, "passed"),
        result("clip", "color", "attribute/color", 10, 5, "failed", failures=[example]),
    ]


def _html(rows: list[dict]) -> str:
    return render_html(build_report(MODELS[:1], typed(rows)))


def test_the_headline_gives_the_verdict_and_the_counts() -> None:
    page = _html(_rows())
    headline = page.split('<p class="headline', 1)[1].split("</p>", 1)[0]
    assert headline == (
        ' st-failed"><b>FAILED</b>: 1 of 3 test x model results did not pass · '
        "clip: 2 passed, 1 failed"
    )
    assert page.index('class="headline') < page.index("<h2>Models</h2>")
    passing = _html(_rows()[:2])
    assert "<b>PASSED</b>: 0 of 2 test x model results did not pass · clip: 2 passed" in passing


def test_failing_tests_come_first_and_their_scores_once() -> None:
    page = _html(_rows())
    tests = page.split("<h2>Tests</h2>", 1)[1]
    assert tests.index("<h3>attribute/color</h3>") < tests.index("<h3>attribute/fine</h3>")
    assert "(first is true)" not in page  # the detail line repeats the table's scores


def test_bar_labels_are_whole() -> None:
    page = _html(_rows())
    assert f'text-anchor="end">{LONG}</text>' in page
    (bars,) = [svg for svg in page.split("<svg")[1:] if "pass rate per test" in svg]
    assert "…" not in bars


def _regressed(threshold_met: bool) -> dict:
    passed = 38 if threshold_met else 24
    gate = gate_block(-20.0, regressed=True)
    return result("clip", f"t{passed}", f"relation/t{passed}", 60, passed, "failed", gate=gate)


def test_a_regression_and_a_threshold_miss_have_their_own_marks() -> None:
    rows = [_regressed(True), _regressed(False), result("clip", "ok", "a/ok", 10, 10, "passed")]
    for row, met in zip(rows, (True, False), strict=False):
        row["threshold"] = 0.5
        row["pass_rate"] = 0.633 if met else 0.4
    lines = format_matrix(build_report(MODELS[:1], typed(rows)))
    assert any(" 63.3% ⇓ (n=60)" in line for line in lines), lines
    assert any(" 40.0% ✗⇓ (n=60)" in line for line in lines), lines
    assert (
        "marks: ✓ reached its threshold, ✗ below its threshold, ⇓ regressed against the baseline"
        in lines
    )
    page = render_html(build_report(MODELS[:1], typed(rows)))
    assert "63.3% ⇓ <small>" in page and "⇓ regressed against the baseline.</p>" in page
