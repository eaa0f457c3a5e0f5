"""The GitHub Actions composite action (``action.yml``): actionlint passes it (through a
workflow that uses it, and its steps as a workflow of their own), and its shell steps,
run here as the runner would run them, write the job summary, one error annotation per
failed capability at its checklist line, the exit-code output, and fail as pytest did."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.colour_project import CHECKLIST, COLOURS
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.report import read_report
from pytest_vlcheck.report.github import error_annotations, escape_data, escape_property
from pytest_vlcheck.report.loader import RunError

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
USES_IT = """\
name: uses vlcheck
on: [push]
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: ./
        with: {model: tiny, checklists: checklists, baseline: baseline.json}
"""


def _action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def _steps_as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """The composite's steps as a reusable workflow's job, its inputs as workflow inputs,
    so actionlint checks every expression, ``uses:`` input and ``if:`` in them."""
    inputs = {
        name: {"type": "string", "required": spec.get("required", False)}
        | ({} if spec.get("required") else {"default": spec.get("default", "")})
        for name, spec in action["inputs"].items()
    }
    job = {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}
    return {"name": "action steps", "on": {"workflow_call": {"inputs": inputs}}, "jobs": {"a": job}}


@pytest.fixture
def actionlint() -> str:
    found = shutil.which("actionlint")
    if found is None:
        pytest.skip("actionlint is not installed (pip install -e '.[actionlint]'; see .ci/run)")
    return found


def _lint(actionlint: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint, "-no-color"], cwd=folder, capture_output=True, text=True, timeout=120
    )


def test_action_yml_passes_actionlint(actionlint: str, tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (tmp_path / ".git").mkdir()  # what actionlint takes for a repository's root
    shutil.copy(ACTION, tmp_path / "action.yml")
    (workflows / "uses.yml").write_text(USES_IT)
    steps = yaml.safe_dump(_steps_as_workflow(_action()), sort_keys=False)
    (workflows / "steps.yml").write_text(steps)
    linted = _lint(actionlint, tmp_path)
    assert linted.returncode == 0 and not linted.stdout, linted.stdout + linted.stderr
    # it reads the action's metadata: a misspelled input is caught
    (workflows / "uses.yml").write_text(USES_IT.replace("model: tiny", "modle: tiny"))
    linted = _lint(actionlint, tmp_path)
    assert 'input "modle" is not defined in action "vlcheck"' in linted.stdout


def _run_step(step: dict[str, Any], inputs: dict[str, str], env: dict[str, str], cwd: Path) -> Any:
    """Run one ``run:`` step as the runner does (bash, ``-e``), its ``env:`` expressions
    filled in from the inputs and the run step's outputs."""

    def filled(value: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("inputs."):
                return inputs[name.removeprefix("inputs.")]
            assert name == "steps.run.outputs.exit-code", name
            output = Path(env["GITHUB_OUTPUT"]).read_text()
            return re.findall(r"exit-code=(\d+)", output)[-1]

        return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", one, value)

    step_env = {key: filled(str(value)) for key, value in step.get("env", {}).items()}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd,
        env=env | step_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_steps_summarise_annotate_and_fail_as_pytest_did(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    for name, rgb in COLOURS.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    (tmp_path / "colour_model.py").write_text(SOURCE)
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    action = _action()
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs |= {"model": "py:colour_model:make", "checklists": "checks.yaml", "args": "-q"}
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    steps = {step["name"]: step for step in action["runs"]["steps"]}
    ran = _run_step(steps["run the checklists"], inputs, env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr  # the gate's status is kept for later
    assert (tmp_path / "output").read_text() == "exit-code=1\n"
    report = _run_step(steps["job summary and annotations"], inputs, env, tmp_path)
    assert report.returncode == 0, report.stderr
    matrix_md = (tmp_path / "vlcheck-report" / "matrix.md").read_text()
    assert (tmp_path / "summary.md").read_text() == matrix_md + "\n"
    line = CHECKLIST.splitlines().index("  - id: hard") + 1
    assert report.stdout.splitlines() == [
        f"::error file=checks.yaml,line={line},title=vlcheck failed%3A relation/spatial (hard) "
        "[make]::relation/spatial: 50.0%25 (1/2, 95%25 CI 9.5-90.5) < 90.0%25 [make]"
    ]  # GitHub reads %25 as %
    finish = _run_step(steps["pass or fail as pytest did"], inputs, env, tmp_path)
    assert finish.returncode == 1

    # an errored test says its error, a checklist that did not collect is one annotation too
    doc = read_report(tmp_path / "vlcheck-report" / "matrix.json")
    errored = replace(doc.results[0], status="error", message="images/x.png: not found\nmore")
    broken = RunError("other.yaml", 3, "other.yaml:3: unknown key 'tset'")
    assert error_annotations(replace(doc, results=[errored], errors=[broken])) == [
        "::error file=other.yaml,line=3,title=vlcheck%3A checklist not collected::other.yaml:3: "
        "unknown key 'tset'",
        f"::error file=checks.yaml,line={errored.line},title=vlcheck error%3A attribute/color "
        "(color) [make]::images/x.png: not found%0Amore",
    ]


def test_the_annotation_escapes_what_ends_a_command() -> None:
    assert escape_data("50% a\r\nb: c, d") == "50%25 a%0D%0Ab: c, d"
    assert escape_property("a: b, c%\n") == "a%3A b%2C c%25%0A"
