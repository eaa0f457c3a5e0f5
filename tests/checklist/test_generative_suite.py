"""The generative suite (``checklists_generative/``) end to end on a tiny random LLaVA, and
README's first command, which must still collect the CLIP suite alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.repo_pytest import REPO, repo_pytest

from pytest_vlcheck.checklist.bundled import GENERATIVE, bundled_checklists
from pytest_vlcheck.checklist.loader import load_checklist


def _readme_first_command() -> list[str]:
    """The pytest part of README's first shell block (after its last ``&&``)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)\n```", readme, re.S)
    assert block is not None
    command = block[1].split("&&")[-1].split()
    assert command[:2] == ["pytest", "checklists"], command
    return command[1:]


def test_readme_first_command_collects_the_clip_suite_alone(tmp_path: Path) -> None:
    args = [a if not a.startswith("--vl-report=") else f"--vl-report={tmp_path}" for a in
            _readme_first_command()]  # fmt: skip
    done = repo_pytest(*args, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    expected = [
        f"checklists/{path.name}::{test.id}[tiny]"
        for path in bundled_checklists()
        for test in load_checklist(path).tests
    ]
    assert sorted(collected) == sorted(expected)
    # a plain `python -m pytest` in the clone collects the test suite only
    ini = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r"^testpaths = (.*)$", ini, re.M) == ['["tests"]']


def test_a_slice_of_the_suite_runs_on_a_tiny_llava(llava_dir: Path, tmp_path: Path) -> None:
    """A yes/no test and an open one: every example asked exactly as written."""
    done = repo_pytest(
        GENERATIVE,
        "-k",
        "existence or number and not choice",
        f"--vl-model=vqa:{llava_dir}",
        "--vl-device=cpu",
        f"--vl-report={tmp_path}",
    )
    out = done.stdout + done.stderr
    assert done.returncode in (0, 1), out  # a random model fails thresholds, nothing else
    assert re.search(r"\b2 (passed|failed)|1 passed, 1 failed", out), out
    rows = [
        json.loads(line)
        for line in (tmp_path / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_test = {row["test"] for row in rows}
    assert by_test == {"existence", "number"}, by_test
    assert len(rows) == 2 * 48
    for row in rows:
        assert re.fullmatch(
            r"USER: <image>\n(Is there an? \w+ in the image\?|How many \w+ are there\?) ASSISTANT:",
            row["prompt"],
        ), row["prompt"]
    assert all("output" in row for row in rows if row["test"] == "number")
    assert {row["extracted"] for row in rows if row["test"] == "existence"} <= {"yes", "no", None}
