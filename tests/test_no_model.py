"""No model, no green: checklist items or ``vl_model`` tests to run without ``--vl-model`` are
a usage error (exit 4, one line saying how to name a model), unless ``--vl-allow-no-model``."""

from __future__ import annotations

import pytest

CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - image: {scene: {objects: [{shape: circle, color: red, size: large, position: [0.5, 0.5]}]}}
        caption: a red circle
        negatives: [a blue circle]
"""

PYTHON_TESTS = """\
def test_plain():
    assert True


def test_probe(vl_model):
    vl_model.score([], [])
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", checks=CHECKLIST)
    pytester.makepyfile(test_probe=PYTHON_TESTS)
    return pytester


def _usage_error_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line.strip()]
    return line


def test_checklist_items_without_a_model_are_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("checks.yaml", "--vl-report=out")
    line = _usage_error_line(result)
    assert line.startswith("ERROR: no model given, so 1 checklist or vl_model test would run")
    assert "--vl-model=tiny" in line and "--vl-allow-no-model" in line
    assert not (project.path / "out" / "matrix.json").exists()  # a usage error writes nothing
    assert "capability matrix" not in result.stdout.str()


def test_vl_model_tests_without_a_model_are_a_usage_error(project: pytest.Pytester) -> None:
    line = _usage_error_line(project.runpytest("test_probe.py"))
    assert "so 1 checklist or vl_model test would run untested" in line


def test_the_count_is_taken_after_deselection(project: pytest.Pytester) -> None:
    assert "so 2 checklist" in _usage_error_line(project.runpytest())
    project.runpytest("-k", "plain").assert_outcomes(passed=1)


def test_collect_only_is_not_a_run(project: pytest.Pytester) -> None:
    assert project.runpytest("--collect-only", "-q").ret == pytest.ExitCode.OK


def test_the_opt_out_skips_them(project: pytest.Pytester) -> None:
    result = project.runpytest("--vl-allow-no-model", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*no model given: pass --vl-model SPEC*"])
    project.makeini("[pytest]\nvl_allow_no_model = true\n")
    project.runpytest().assert_outcomes(passed=1, skipped=2)


def test_an_ini_model_is_a_model(project: pytest.Pytester) -> None:
    project.makepyfile(colour_model="def make(): raise RuntimeError('built')")
    project.makeini("[pytest]\nvl_model = py:colour_model:make\n")
    assert project.runpytest("checks.yaml").ret == pytest.ExitCode.TESTS_FAILED


def test_under_xdist_too(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--vl-model=tiny" in result.stderr.str() + result.stdout.str()


def test_a_model_for_testpaths_without_checklists_says_how(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = unit\n")
    pytester.mkdir("unit")
    (pytester.path / "unit" / "test_unit.py").write_text("def test_unit():\n    pass\n")
    pytester.makefile(".yaml", checks=CHECKLIST)
    line = _usage_error_line(pytester.runpytest("--vl-model=py:colour_model:make"))
    assert line == (
        "ERROR: a model is given but pytest took its paths from the ini file's testpaths "
        "(unit), which hold no checklist or vl_model test; expected the checklists' paths, "
        "e.g. pytest checklists --vl-model=tiny, or --vl-bundled for the shipped suite"
    )
    # named paths, or a selection, are what the user asked for
    pytester.runpytest("--vl-model=py:colour_model:make", "unit").assert_outcomes(passed=1)
    pytester.runpytest("--vl-model=py:m:make", "-k", "unit").assert_outcomes(passed=1)
