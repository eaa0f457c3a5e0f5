"""``known_failures``: a test expected to fail on a model is xfailed; a pass there is XPASS and
fails the run (pytest's strict xfail), and every report says which it was."""

from __future__ import annotations

import json

import pytest
from helpers.colour_project import colour_project

CHECKLIST = """\
vlcheck: 1
image_root: images
tests:
  - id: fails
    capability: relation/spatial
    task: caption
    threshold: 0.9
    known_failures: {make: "reads colours, not positions"}
    examples:
      - {id: h1, image: red.png, caption: a red square left of a blue one, negatives: [a blue square left of a red one]}
      - {id: h2, image: blue.png, caption: a blue square, negatives: [a red square]}
  - id: passes
    capability: attribute/color
    task: caption
    threshold: 0.5
    known_failures: {make: "thought too hard", other: "not run"}
    examples:
      - {id: r, image: red.png, caption: a red square, negatives: [a blue square]}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def test_a_known_failure_is_xfailed_and_a_pass_is_xpass(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--vl-model=py:colour_model:make", "--vl-report=rep", "--vl-no-cache", "-rxX"
    )
    result.assert_outcomes(xfailed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "[[]XPASS(strict)[]] thought too hard",
            "relation/spatial*50.0% ✗ xfail (n=2)",
            "attribute/color*100.0% ✓ XPASS (n=1)",
            "make: 0 passed, 0 failed, 0 error, 0 skipped, 1 xfailed, 1 xpassed",
            "XFAIL checks.yaml::fails[[]make[]] - reads colours, not positions",
        ]
    )
    rows = {
        r["test"]: r for r in json.loads((project.path / "rep/matrix.json").read_text())["results"]
    }
    assert (rows["fails"]["status"], rows["fails"]["known_failure"]) == (
        "xfailed",
        "reads colours, not positions",
    )
    assert (rows["passes"]["status"], rows["passes"]["known_failure"]) == (
        "xpassed",
        "thought too hard",
    )


def test_another_model_is_judged_as_usual(project: pytest.Pytester) -> None:
    result = project.runpytest("--vl-model=mine=py:colour_model:make", "--vl-no-cache")
    result.assert_outcomes(passed=1, failed=1)


def test_an_empty_mapping_is_refused_with_its_line(project: pytest.Pytester) -> None:
    project.makefile(
        ".yaml", checks=CHECKLIST.replace('{make: "thought too hard", other: "not run"}', "{}")
    )
    result = project.runpytest("--vl-model=py:colour_model:make")
    result.stdout.fnmatch_lines(
        ["*checks.yaml:16: 'known_failures' is empty; expected a mapping of model name to reason"]
    )
