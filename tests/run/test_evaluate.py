"""``pytest_vlcheck.evaluate``: the Python API equals a pytest run, and refuses mistakes in
one line each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck import Run, evaluate
from pytest_vlcheck.errors import SettingsError, VlcheckUserError
from pytest_vlcheck.results.blocks import GateComparison
from pytest_vlcheck.run.settings import KeywordOptions, build_settings

KNOWN_FAILURE = CHECKLIST.replace(
    "    threshold: 0.9\n", "    threshold: 0.9\n    known_failures: {make: too hard}\n", 1
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, KNOWN_FAILURE)


def without_model_identity(document: dict) -> dict:
    """``matrix.json`` without ``models[].spec`` and ``fingerprint`` (how the model was
    given, not what it measured)."""
    models = [{"name": m["name"]} for m in document["models"]]
    return {**document, "models": models}


def test_evaluate_equals_the_pytest_report(project: pytest.Pytester) -> None:
    project.runpytest("--vl-model=py:colour_model:make", "--vl-report=rep")
    run = evaluate("py:colour_model:make", ["checks.yaml"], report_dir="api")
    expected = (project.path / "rep" / "matrix.json").read_text()
    assert json.loads(expected) == run.to_json()
    for name in ("matrix.json", "matrix.md", "matrix.csv", "report.html", "samples.jsonl"):
        assert (project.path / "api" / name).read_bytes() == (
            project.path / "rep" / name
        ).read_bytes(), name
    assert [r.status for r in run.results] == ["passed", "xfailed", "passed", "passed", "passed"]
    assert run.results[1].known_failure == "too hard"
    assert run.passed  # the known failure failed, as expected


def test_a_scorer_object_measures_what_its_spec_does(project: pytest.Pytester) -> None:
    import colour_model  # written by the project fixture

    by_spec = evaluate("py:colour_model:make", "checks.yaml")
    by_object = evaluate(colour_model.make(), "checks.yaml", name="make")
    assert isinstance(by_object, Run)
    assert without_model_identity(by_object.to_json()) == without_model_identity(by_spec.to_json())
    assert by_object.to_json()["models"][0]["spec"] == "<ColourScorer object>"


def test_a_tiny_open_clip_model_equals_the_pytest_report(project: pytest.Pytester) -> None:
    # evaluate here (torch and open_clip stay imported in the test process: tests/conftest.py),
    # pytest in a process of its own (forked from the preloaded server: helpers/forked_scripts.py)
    from helpers.forked_scripts import run_forked
    from helpers.model_builders import build_open_clip

    config, weights = build_open_clip(Path("oc"))
    spec = f"oc=open_clip:{config}@{weights}"
    evaluated = evaluate(spec, ".", no_cache=True, report_dir="api").to_json()
    args = [f"--vl-model={spec}", "--vl-report=rep", "--vl-no-cache", "-p", "no:cacheprovider"]
    out = run_forked("-m pytest", args, project.path, project.path / "logs", 300, status=1)
    pytest.RunResult(1, out.splitlines(), [], 0).assert_outcomes(failed=5)
    expected = json.loads((project.path / "rep" / "matrix.json").read_text())
    assert evaluated == expected
    assert {r["model"] for r in expected["results"]} == {"oc"}


def test_select_keeps_test_ids_and_capability_prefixes(project: pytest.Pytester) -> None:
    run = evaluate("py:colour_model:make", "checks.yaml", select=["attribute", "pair"])
    assert [r.test for r in run.results] == ["color", "pick", "pair", "itm"]
    run = evaluate("py:colour_model:make", "checks.yaml", select="attribute/color")
    assert [r.test for r in run.results] == ["color", "pick"]
    expected = (
        r"^select: 'attr' is neither a test id.*; expected e.g. 'color' or 'attribute/color'$"
    )
    with pytest.raises(SettingsError, match=expected):
        evaluate("py:colour_model:make", "checks.yaml", select=["attr"])


def test_a_baseline_gates_the_run(project: pytest.Pytester) -> None:
    first = evaluate("py:colour_model:make", "checks.yaml", save_baseline="base.json")
    assert not first.regressions
    gated = evaluate("py:colour_model:make", "checks.yaml", baseline="base.json", max_drop=0)
    assert all(isinstance(r.gate, GateComparison) and not r.gate.regressed for r in gated.results)
    assert not gated.regressions


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"batch_sise": 4},
            "batch_sise: not a vlcheck option; did you mean 'batch_size'? expected one of",
        ),
        ({"batch_size": 0}, "batch_size is 0; expected a whole number from 1 to 65536, or auto"),
        ({"threshold": "high"}, "threshold is 'high'; expected a finite number from 0 to 1"),
        ({"threshold": 1.5}, "threshold is 1.5; expected a finite number from 0 to 1"),
        ({"precision": "fp8"}, "precision is 'fp8'; expected one of ('fp32', 'fp16', 'bf16')"),
        ({"alpha": 1}, "alpha is 1; expected a finite number in (0, 1)"),
        ({"cache_size": "lots"}, "cache_size is 'lots'; expected a size from 1 byte"),
        ({"max_image_pixels": 0}, "max_image_pixels is 0; expected a whole number from 1 to 2**40"),
        ({"baseline": "absent.json"}, "baseline: "),
        ({"prior": "nonsense"}, "prior: "),
    ],
)
def test_a_bad_option_is_one_line_naming_the_keyword(
    project: pytest.Pytester, arguments: dict, message: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        evaluate("py:colour_model:make", "checks.yaml", **arguments)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_bad_models_and_paths_are_one_line(project: pytest.Pytester) -> None:
    cases = [
        (("nope:x", "checks.yaml"), "model: "),
        (
            (object(), "checks.yaml"),
            "model: an object object cannot be scored; expected an open_clip model",
        ),
        (("py:colour_model:make", "absent"), "checklists: absent does not exist; expected"),
        (("py:colour_model:make", "colour_model.py"), "checklists: colour_model.py: not a"),
        (("py:colour_model:make", "images"), "checklists: no checklist found in images; expected"),
        (("py:colour_model:make", 42), "checklists: got int 42; expected a path, or a list"),
        (("py:colour_model:make", ["checks.yaml", None]), "checklists: got list ['checks.yaml', N"),
    ]
    for (model, paths), message in cases:
        with pytest.raises(VlcheckUserError) as caught:
            evaluate(model, paths)
        assert str(caught.value).startswith(message), str(caught.value)
        assert "\n" not in str(caught.value)


def test_messages_name_the_option_as_its_caller_spelled_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    folder = blocker / "report"
    with pytest.raises(SettingsError, match=rf"^report_dir {folder}: cannot write there"):
        build_settings(KeywordOptions({"report_dir": folder}, rootdir=tmp_path))


def test_the_report_option_is_named_as_pytest_spells_it(project: pytest.Pytester) -> None:
    project.makefile("", blocker="")
    result = project.runpytest("--vl-model=py:colour_model:make", "--vl-report=blocker/rep")
    result.stderr.fnmatch_lines(["ERROR: --vl-report blocker/rep: cannot write there*"])


def test_evaluate_imports_no_pytest(project: pytest.Pytester) -> None:
    code = (
        "import sys; import pytest_vlcheck as v; "
        "run = v.evaluate('py:colour_model:make', 'checks.yaml'); "
        "print(len(run.results), 'pytest' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project.path, capture_output=True, text=True
    )
    assert done.stdout.split() == ["5", "False"], done.stderr


def test_the_options_page_names_every_option_and_keyword() -> None:
    import re

    from pytest_vlcheck.run.options import COMMAND_LINE_OPTIONS
    from pytest_vlcheck.run.settings import DEFAULTS

    page = (Path(__file__).parents[2] / "docs" / "options.md").read_text()
    table = page.split("# Options", 1)[1].split("##", 1)[0]
    rows = re.findall(r"^\| `(--vl-[a-z-]+)[^`]*` \|[^|]*\|([^|]*)\|", table, re.M)
    assert sorted(flag for flag, _ in rows) == sorted(flag for flag, _ in COMMAND_LINE_OPTIONS)
    keywords = {k for _, cell in rows for k in re.findall(r"`([a-z_]+)`", cell)}
    assert keywords == set(DEFAULTS) | {"bundled"}


def test_a_failed_test_fails_the_run(project: pytest.Pytester) -> None:
    project.makefile(".yaml", plain=CHECKLIST)  # 'hard' fails, without a known failure
    run = evaluate("py:colour_model:make", "plain.yaml")
    assert not run.passed
    assert [r.test for r in run.results if r.status == "failed"] == ["hard"]


def test_a_model_that_will_not_load_raises_one_line(project: pytest.Pytester) -> None:
    with pytest.raises(VlcheckUserError) as caught:
        evaluate("py:colour_model:absent", "checks.yaml")
    assert str(caught.value) == (
        "cannot load model 'py:colour_model:absent': 'absent' in module 'colour_model' "
        f"({project.path / 'colour_model.py'}) does not exist; expected a function or class "
        "returning a scorer"
    )
