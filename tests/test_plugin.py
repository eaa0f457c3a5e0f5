"""End to end through pytest itself: collection, verdicts, output, JUnit XML and report files."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from helpers.colour_project import CHECKLIST, colour_project
from helpers.colour_scorer import SOURCE


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def test_verdicts_output_junit_and_report(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--vl-model=py:colour_model:make",
        "--junitxml=out.xml",
        "--vl-report=report",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*vlcheck capability matrix*",
            "relation/spatial * 90.0% * 50.0% ✗ (n=2)",
            "*FAILED checks.yaml::hard[[]make[]] - relation/spatial: 50.0% (1/2*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # JUnit XML carries the numbers as properties
    root = ET.parse(project.path / "out.xml").getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == "color[make]")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["vlcheck_pass_rate"] == "1.0" and props["vlcheck_n"] == "3"
    assert props["vlcheck_capability"] == "attribute/color"
    assert props["vlcheck_fingerprint"] == "colour-v1" and "vlcheck_unscored" not in props
    # the same reported fields as matrix.csv's leading columns, in the same order
    csv_header = (project.path / "report" / "matrix.csv").read_text().splitlines()[0].split(",")
    reported = [name.removeprefix("vlcheck_") for name in props][1:]  # after vlcheck_verdict
    present = [name for name in csv_header[:15] if f"vlcheck_{name}" in props]  # no empties
    assert reported[: len(present)] == present
    assert props["vlcheck_status"] == "passed" and props["vlcheck_test"] == "color"
    # matrix.json follows the contract and agrees with pytest's verdicts
    doc = json.loads((project.path / "report" / "matrix.json").read_text())
    assert doc["vlcheck_report"] == 1
    assert doc["models"] == [
        {"name": "make", "spec": "py:colour_model:make", "fingerprint": "colour-v1"}
    ]
    rows = {r["test"]: r for r in doc["results"]}
    assert [r["test"] for r in doc["results"]] == ["color", "hard", "pick", "pair", "itm"]
    assert rows["hard"]["status"] == "failed" and rows["color"]["status"] == "passed"
    assert rows["color"]["slices"]["hue"]["cold"] == {"n": 2, "passed": 2, "pass_rate": 1.0}
    assert rows["color"]["chance"] == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 3)
    assert rows["pair"]["metrics"]["group_score"] == 1.0 and rows["pair"]["chance"] == 1 / 6
    assert rows["itm"]["metrics"]["positive_accuracy"] == 1.0
    assert rows["hard"]["failures"][0]["id"] == "h1"
    for name in ("matrix.md", "matrix.csv", "report.html"):
        assert (project.path / "report" / name).stat().st_size > 0


def test_a_run_that_measures_nothing_keeps_the_report(project: pytest.Pytester) -> None:
    """``--collect-only`` (say with --vl-report in addopts) or a ``-k`` that selects nothing
    leaves the last report as it was, and a deselected checklist is not 'not recognised'."""
    args = ("--vl-model=py:colour_model:make", "--vl-report=report", "-p", "no:cacheprovider")
    project.runpytest(*args)
    before = (project.path / "report" / "matrix.json").read_bytes()
    project.runpytest(*args, "--collect-only")
    nothing = project.runpytest(*args, "-k", "no_such_test")
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "no checklist was collected" not in nothing.stdout.str()
    assert (project.path / "report" / "matrix.json").read_bytes() == before


def test_failure_text_lists_failing_examples(project: pytest.Pytester) -> None:
    result = project.runpytest("--vl-model=py:colour_model:make", "-k", "hard")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "relation/spatial: 50.0% (1/2, 95% CI 9.5-90.5) < 90.0% [[]make[]]",
            "task caption; chance 50.0%*",
            "failing examples (first 1):",
            "  [[]h1[]] red.png: 'a red square left of a blue one' *",
        ]
    )


def test_threshold_override_and_model_names(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--vl-model=a=py:colour_model:make",
        "--vl-model=b=py:colour_model:make",
        "--vl-threshold=0.5",
        "-v",
    )
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        ["*checks.yaml::color[[]a[]] PASSED*", "*checks.yaml::color[[]b[]] PASSED*"]
    )


def test_selection_by_capability_marker_and_keyword(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--vl-model=py:colour_model:make", "-m", "relation", "--strict-markers"
    )
    result.assert_outcomes(failed=1)
    result = project.runpytest("--vl-model=py:colour_model:make", "-k", "color and not match")
    result.assert_outcomes(passed=2)


def test_without_a_model_items_skip_with_a_reason_when_allowed(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", "--vl-allow-no-model")
    result.assert_outcomes(skipped=5)
    result.stdout.fnmatch_lines(["*no model given: pass --vl-model SPEC*"])


def test_ini_default_model(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nvl_model = py:colour_model:make\n")
    project.runpytest("-k", "color and not match").assert_outcomes(passed=2)


def test_collect_only_never_imports_torch(project: pytest.Pytester) -> None:
    project.makeconftest("""
import sys
def pytest_collection_finish(session):
    assert "torch" not in sys.modules and "open_clip" not in sys.modules
""")
    result = project.runpytest_subprocess("--vl-model=clip", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["checks.yaml::color[[]clip[]]", "*5 tests collected*"])
    assert result.ret == 0


def test_malformed_checklist_is_a_clean_collection_error(project: pytest.Pytester) -> None:
    project.makefile(
        ".yaml",
        broken="vlcheck: 1\ntests:\n  - id: x\n    capability: a/b\n"
        "    task: caption\n    threshold: 1.5\n    examples: []\n",
    )
    result = project.runpytest("--vl-model=py:colour_model:make", "broken.yaml")
    result.stdout.fnmatch_lines(
        ["*broken.yaml:6: 'threshold' is 1.5; expected a number from 0 to 1*"]
    )
    assert "Traceback" not in result.stdout.str() and "loader.py" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_bad_model_spec_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--vl-model=nonsense")
    result.stderr.fnmatch_lines(["*--vl-model: unknown model 'nonsense'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_model_load_failure_errors_items_cleanly(project: pytest.Pytester) -> None:
    (project.path / "cfg.json").write_text("{}")  # present (a missing file is a usage error)
    (project.path / "bad.safetensors").write_bytes(b"not weights")
    result = project.runpytest("--vl-model=open_clip:cfg.json@bad.safetensors", "--vl-report=rep")
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(["*cannot load model 'open_clip:cfg.json@bad.safetensors'*"])
    rows = json.loads((project.path / "rep" / "matrix.json").read_text())["results"]
    assert {r["status"] for r in rows} == {"error"}
    assert rows[0]["message"].startswith("cannot load model 'open_clip:cfg.json@")


def test_missing_images_error_or_skip(project: pytest.Pytester) -> None:
    (project.path / "images" / "blue.png").unlink()
    result = project.runpytest(
        "--vl-model=py:colour_model:make", "-k", "hard or (color and not pick)"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*1 image(s) of 1 example(s) could not be loaded*",
            "*checks.yaml:11: blue.png: file not found*",
        ]
    )
    result = project.runpytest(
        "--vl-model=py:colour_model:make",
        "--vl-missing=skip",
        "--vl-report=rep",
        "-k",
        "hard",
        "--junitxml=out.xml",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*0.0% (0/1, *) < 90.0% [[]make[]]; 1 example(s) unscored (1 image unavailable)*"]
    )
    row = json.loads((project.path / "rep" / "matrix.json").read_text())["results"][0]
    assert row["unscored"] == {"image unavailable": 1} and row["n"] == 1
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(project.path / "out.xml").getroot().iter("property")
    }
    assert props["vlcheck_unscored"] == "1 (1 image unavailable)"


def test_xdist_run_gathers_every_row(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--vl-model=py:colour_model:make", "-n", "2", "--vl-report=rep", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4, failed=1)
    doc = json.loads((project.path / "rep" / "matrix.json").read_text())
    assert [r["test"] for r in doc["results"]] == ["color", "hard", "pick", "pair", "itm"]
    assert doc["models"][0]["fingerprint"] == "colour-v1"


SCORES_CHECKLIST = """\
vlcheck: 1
tests:
  - id: pn
    capability: relation/predicate_noun
    task: group
    criterion: text
    threshold: 0.5
    examples:
      - {id: "1-2", images: [a.jpg, b.jpg], captions: [a man sitting, a woman sitting]}
      - {id: "3-4", images: [c.jpg, {path: c.jpg, crop: [0, 0, 5, 5]}], captions: [x, y]}
"""


def test_precomputed_scores_need_no_images(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", pn=SCORES_CHECKLIST)
    lines = [
        ("a.jpg", "a man sitting", 0.9),
        ("a.jpg", "a woman sitting", 0.1),
        ("b.jpg", "a man sitting", 0.6),
        ("b.jpg", "a woman sitting", 0.4),
        ("c.jpg", "x", 0.7),
        ("c.jpg", "y", 0.2),
    ]
    records = [{"image": i, "text": t, "score": s} for i, t, s in lines]
    records += [
        {"image": "c.jpg", "crop": [0, 0, 5, 5], "text": "x", "score": 0.1},
        {"image": "c.jpg", "crop": [0, 0, 5, 5], "text": "y", "score": 0.3},
        # an example-specific line wins over the general one
        {"image": "b.jpg", "text": "a woman sitting", "score": 0.8, "example": "1-2"},
    ]
    pytester.path.joinpath("scores.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n"
    )
    result = pytester.runpytest("--vl-model=scores:scores.jsonl", "--vl-report=rep")
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "rep" / "matrix.json").read_text())["results"][0]
    assert row["pass_rate"] == 1.0 and row["metrics"]["caption_choice_accuracy"] == 1.0
    # without the example line, pair 1-2 fails its second triplet: 1 of 2 pairs
    pytester.path.joinpath("scores.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records[:-1]) + "\n"
    )
    result = pytester.runpytest("--vl-model=scores:scores.jsonl", "--vl-report=rep")
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "rep" / "matrix.json").read_text())["results"][0]
    assert row["pass_rate"] == 0.5 and row["metrics"]["caption_choice_accuracy"] == 0.75


def test_precomputed_scores_missing_pair_is_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", pn=SCORES_CHECKLIST)
    pytester.path.joinpath("s.jsonl").write_text(
        json.dumps({"image": "a.jpg", "text": "a man sitting", "score": 1}) + "\n"
    )
    result = pytester.runpytest("--vl-model=scores:s.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*s.jsonl has no score for image 'a.jpg' with text 'a woman sitting' (example '1-2')*"]
    )


def test_malformed_scores_file_is_named_with_its_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", pn=SCORES_CHECKLIST)
    pytester.path.joinpath("s.jsonl").write_text('{"image": "a.jpg", "text": "x"}\n')
    result = pytester.runpytest("--vl-model=scores:s.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*s.jsonl:1: 'score' must be a finite number, got None*"])


def test_bundled_checklists_are_collected_and_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(colour_model=SOURCE)
    pytester.syspathinsert()
    result = pytester.runpytest("--vl-bundled", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*attribute.yaml::color", "*20 tests collected*"])
    # the fake model sees some colours and reads only red, green and blue: it beats chance on
    # part of the colour tests and ties (so fails) every spatial example; most candidates of
    # color_jpeg_resize name none of its three colours, so it ties (fails) there too
    result = pytester.runpytest(
        "--vl-bundled",
        "--vl-model=py:colour_model:make",
        "-k",
        "color or spatial_replaced",
        "--vl-threshold=0.3",
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*relation/spatial: 0.0% (0/240, *"])


def test_bundled_checklists_outside_the_rootdir_have_machine_independent_names(
    pytester: pytest.Pytester,
) -> None:
    """An installed bundled checklist lies in a virtual environment whose path differs from
    machine to machine; reports and baselines name it ``bundled:NAME.yaml``, and
    ``vlcheck baseline prune`` finds it again."""
    pytester.makepyfile(colour_model=SOURCE)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--vl-bundled",
        "--vl-model=py:colour_model:make",
        "-k",
        "color and not jpeg and not image",
        "--vl-report=report",
        "--vl-save-baseline=base.json",
    )
    result.assert_outcomes(failed=1)
    matrix = json.loads((pytester.path / "report" / "matrix.json").read_text())
    assert [r["file"] for r in matrix["results"]] == ["bundled:attribute.yaml"]
    baseline = json.loads((pytester.path / "base.json").read_text())
    assert [e["file"] for e in baseline["entries"]] == ["bundled:attribute.yaml"]
    pruned = subprocess.run(
        [sys.executable, "-m", "pytest_vlcheck.cli", "baseline", "prune", "base.json"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pruned.returncode == 0, pruned.stderr
    assert "dropped 0 of 1 entries" in pruned.stdout
