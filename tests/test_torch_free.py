"""The torch-free install: torch, torchvision, open_clip, transformers and sentencepiece are
the ``[models]`` extra, and what needs no model works without them. Checked in fresh
interpreters where those packages cannot be imported (an import blocker on ``sys.meta_path``),
as a checklist author's PR job and a CI merge job install it: ``vlcheck validate``, ``audit``,
``import``, ``report``, ``compare`` and ``merge``, and a pytest run of precomputed scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL_PACKAGES = ("torch", "torchvision", "open_clip", "transformers", "sentencepiece")
BLOCKER = f"""
import sys


class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {MODEL_PACKAGES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
"""
CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {id: a, image: red.png, caption: a red square, negatives: [a blue square]}
      - {id: b, image: red.png, caption: a red thing, negatives: [a green thing]}
  - id: shape
    capability: object/shape
    task: caption
    threshold: 0.5
    examples:
      - {id: c, image: red.png, caption: a square, negatives: [a circle]}
"""


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``sitecustomize`` makes the model packages unimportable."""
    folder = tmp_path_factory.mktemp("blocked")
    (folder / "sitecustomize.py").write_text(BLOCKER)
    return folder


def _run(blocked: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(ROOT)])}
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def test_the_blocker_blocks(blocked: Path, tmp_path: Path) -> None:
    done = _run(blocked, tmp_path, "-c", "import torch")
    assert "No module named 'torch' (blocked)" in done.stderr


def test_the_commands_that_need_no_model_work_without_the_model_packages(
    blocked: Path, tmp_path: Path
) -> None:
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    scores = [("a red square", 0.6), ("a blue square", 0.4), ("a red thing", 0.3)]
    scores += [("a green thing", 0.5), ("a square", 0.7), ("a circle", 0.2)]
    (tmp_path / "s.jsonl").write_text(
        "".join(json.dumps({"image": "red.png", "text": t, "score": s}) + "\n" for t, s in scores)
    )
    vlcheck = ("-m", "pytest_vlcheck.cli")
    for shard in ("1/2", "2/2"):  # a sharded CI run of precomputed scores, then its merge
        job = ("--vl-model=scores:s.jsonl", f"--vl-shard={shard}", f"--vl-report=r{shard[0]}")
        done = _run(
            blocked, tmp_path, "-m", "pytest", "checks.yaml", "-p", "no:cacheprovider", *job
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr
    commands = [
        ("validate", "checks.yaml"),
        ("audit", "checks.yaml"),
        (
            "import",
            "sugarcrepe",
            str(ROOT / "tests/fixtures/importers/sugarcrepe"),
            "-o",
            "sc.yaml",
        ),
        ("merge", "r1", "r2", "-o", "merged"),
        ("report", "merged/matrix.json", "-o", "again"),
        ("compare", "r1", "merged", "-o", "cmp"),
    ]
    for command in commands:
        done = _run(blocked, tmp_path, *vlcheck, *command)
        assert done.returncode == 0, (command, done.stdout + done.stderr)
        assert "Traceback" not in done.stderr, command
    rows = json.loads((tmp_path / "merged" / "matrix.json").read_text())["results"]
    assert sorted(r["test"] for r in rows) == ["color", "shape"]
    assert (tmp_path / "again" / "report.html").is_file() and (tmp_path / "sc.yaml").is_file()


def test_the_model_packages_are_the_models_extra_and_dev_has_it() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [r.split(">")[0].split("=")[0].split("[")[0] for r in project["dependencies"]]
    assert not {"torch", "torchvision", "open_clip_torch", "transformers"} & set(names)
    models = [r.split(">")[0] for r in project["optional-dependencies"]["models"]]
    assert {"torch", "torchvision", "open_clip_torch", "transformers"} <= set(models)
    assert "pytest-vlcheck[models]" in project["optional-dependencies"]["dev"]


def test_a_model_without_its_packages_says_which_extra_to_install(
    blocked: Path, tmp_path: Path
) -> None:
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    done = _run(
        blocked,
        tmp_path,
        "-m",
        "pytest",
        "checks.yaml",
        "--vl-model=tiny",
        "-p",
        "no:cacheprovider",
    )
    assert 'pip install "pytest-vlcheck[models]"' in done.stdout, done.stdout[-3000:]
