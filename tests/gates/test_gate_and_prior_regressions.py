"""Guarantees of earlier rounds that slipped once, pinned through pytest: a baseline whose
example ids were all renamed says so (a gate that compared nothing never passes silently), and
a prior returning the wrong number of NLLs is one line per item, not a traceback. (An ARO id
given twice is in test_importer_faults.)"""

from __future__ import annotations

import json

import pytest
from helpers.colour_project import colour_project

THREE = """\
vlcheck: 1
image_root: images
tests:
  - id: red
    capability: attribute/red
    task: caption
    threshold: 0.5
    examples:
      - {id: r1, image: red.png, caption: a red square, negatives: [a blue square]}
      - {id: r2, image: red.png, caption: red, negatives: [green]}
  - id: green
    capability: attribute/green
    task: caption
    threshold: 0.5
    examples:
      - {id: g1, image: green.png, caption: a green square, negatives: [a red square]}
  - id: blue
    capability: attribute/blue
    task: caption
    threshold: 0.5
    examples:
      - {id: b1, image: blue.png, caption: a blue square, negatives: [a green square]}
"""
MODEL = "--vl-model=py:colour_model:make"


def test_a_baseline_whose_ids_were_all_renamed_says_no_example_in_common(
    pytester: pytest.Pytester,
) -> None:
    project = colour_project(pytester, THREE)
    project.runpytest(MODEL, "--vl-save-baseline=base.json").assert_outcomes(passed=3)
    baseline = (project.path / "base.json").read_bytes()
    renamed = THREE
    for old in ("r1", "r2", "g1", "b1"):
        renamed = renamed.replace(f"{{id: {old},", f"{{id: new-{old},")
    (project.path / "checks.yaml").write_text(renamed)
    gate = ("--vl-baseline=base.json", "--vl-allow-no-gate")  # else a usage error
    result = project.runpytest(MODEL, *gate, "--vl-report=rep")
    result.assert_outcomes(passed=3)  # by the thresholds alone; the gate compared nothing
    result.stdout.fnmatch_lines(
        [
            "checks.yaml::red [[]make[]]: not gated: no example id in common with the baseline "
            "entry of make (2 ids there, 2 here): nothing to pair",
            "vlcheck: WARNING: not gated: 3 of 3 items share no example id with their baseline "
            "entry: *; the example ids changed since the baseline was saved: save a new baseline",
        ]
    )
    rows = json.loads((project.path / "rep" / "matrix.json").read_text())["results"]
    assert all("no example id in common" in row["gate"]["warning"] for row in rows)
    assert (project.path / "base.json").read_bytes() == baseline


SHORT_PRIOR = """
class Short:
    name = "Short"

    def text_nll(self, texts):
        return [1.0]


def make():
    return Short()
"""


def test_a_prior_returning_the_wrong_count_is_one_line(pytester: pytest.Pytester) -> None:
    project = colour_project(pytester, THREE)
    project.makepyfile(short_prior=SHORT_PRIOR)
    result = project.runpytest(MODEL, "--vl-prior=py:short_prior:make", "--vl-report=rep")
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(errors=3)
    assert "Traceback" not in output and "ValueError" not in output
    result.stdout.fnmatch_lines(
        [
            f"{project.path / 'checks.yaml'}:4: test 'red': --vl-prior py:short_prior:make: its "
            "text_nll returned 1 NLLs for 4 texts; expected one per text",
            "*vlcheck capability matrix*",
        ]
    )
    rows = json.loads((project.path / "rep" / "matrix.json").read_text())["results"]
    assert [row["status"] for row in rows] == ["error"] * 3
