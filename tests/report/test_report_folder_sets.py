"""Issue 48, class 5: nothing measured, nothing rewritten; a report folder is one run's set.

A run in which every test errored leaves the baseline byte-identical. A run killed (SIGKILL)
between its report files leaves a folder that ``vlcheck report``, ``compare`` and ``merge``
refuse in one line instead of reading one run's matrix beside another's samples; two runs
writing one ``--vl-report`` folder at once leave one whole run's set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.checklist_text import BLUE, RED, checklist
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.results.manifest import MANIFEST, check_report_folder, manifest_run

KILL_BEFORE_SAMPLES = """\
import os, signal
import pytest_vlcheck.results.samples as samples

def _killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

samples.write_samples = _killed
"""
RACE = """\
import contextlib, os, time
from pathlib import Path
import pytest_vlcheck.report as report
import pytest_vlcheck.results.manifest as manifest
import pytest_vlcheck.results.samples as samples

PER_FILE, START = float(os.environ["RACE_PER_FILE"]), float(os.environ["RACE_START"])
writing = manifest.writing

@contextlib.contextmanager
def _together(folder):  # both runs arrive, then each starts writing after its own delay
    arrived = Path("arrived")
    arrived.mkdir(exist_ok=True)
    (arrived / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(arrived.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(START)
    with writing(folder):
        yield

def _slow(write):
    def slow(*args, **kwargs):
        time.sleep(PER_FILE)
        return write(*args, **kwargs)
    return slow

manifest.writing = _together
report.atomic_write_text = _slow(report.atomic_write_text)
samples.write_samples = _slow(samples.write_samples)
"""
BROKEN_MODEL = "def make():\n    raise RuntimeError('no weights here')\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, rgb in {"red": (220, 20, 20), "blue": (20, 20, 220)}.items():
        Image.new("RGB", (8, 8), rgb).save(tmp_path / f"{name}.png")
    (tmp_path / "colour_model.py").write_text(SOURCE)
    (tmp_path / "broken_model.py").write_text(BROKEN_MODEL)
    (tmp_path / "checks.yaml").write_text(checklist(RED, BLUE))
    return tmp_path


def _start(project: Path, *args: str, **environ: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), **environ}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "checks.yaml", *args],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _run(project: Path, *args: str) -> tuple[int, str]:
    proc = _start(project, *args)
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out


def _vlcheck(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "pytest_vlcheck.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_run_where_every_test_errored_leaves_the_baseline_byte_identical(project: Path) -> None:
    code, out = _run(project, "--vl-model=colour=py:colour_model:make", "--vl-save-baseline=b.json")
    assert code == 0, out
    baseline = project / "b.json"
    # an older version's layout (no key this version would add), as the file was
    older = json.loads(baseline.read_text())
    baseline.write_text(json.dumps(older, indent=1, sort_keys=True))
    before = baseline.read_bytes()
    code, out = _run(project, "--vl-model=colour=py:broken_model:make", "--vl-save-baseline=b.json")
    assert code == 1 and "no weights here" in out, out
    assert baseline.read_bytes() == before


def test_a_run_killed_between_report_files_leaves_a_folder_readers_refuse(project: Path) -> None:
    code, out = _run(project, "--vl-model=colour=py:colour_model:make", "--vl-report=rep")
    assert code == 0, out
    first = manifest_run(project / "rep")
    assert first is not None
    check_report_folder(project / "rep")
    (project / "checks.yaml").write_text(checklist(RED, BLUE, extra="    threshold: 0.25\n"))
    (project / "conftest.py").write_text(KILL_BEFORE_SAMPLES)
    code, out = _run(project, "--vl-model=colour=py:colour_model:make", "--vl-report=rep")
    assert code == -9, out
    assert manifest_run(project / "rep") == first  # the new matrix, the old samples
    for args in (
        ["report", "rep/matrix.json"],
        ["compare", "rep", "rep"],
        ["merge", "rep", "-o", "merged"],
    ):
        done = _vlcheck(project, *args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"are not the files run {first} wrote ({MANIFEST}): the folder mixes two runs" in (
            done.stderr
        )
        assert "matrix.json, matrix.md, matrix.csv, report.html" in done.stderr
    (project / "conftest.py").unlink()
    code, out = _run(project, "--vl-model=colour=py:colour_model:make", "--vl-report=rep")
    assert code == 0, out
    assert _vlcheck(project, "report", "rep/matrix.json").returncode == 0  # whole again


def test_two_runs_writing_one_folder_at_once_leave_one_runs_set(project: Path) -> None:
    """Timed so that, unlocked, the second run's matrix files land after the first's and
    the first's samples.jsonl and manifest after the second's: a mixed folder."""
    (project / "conftest.py").write_text(RACE)
    runs = [
        _start(project, "--vl-model=slow=py:colour_model:make", "--vl-report=rep",
               RACE_PER_FILE="0.3", RACE_START="0"),
        _start(project, "--vl-model=quick=py:colour_model:make", "--vl-report=rep",
               RACE_PER_FILE="0.02", RACE_START="0.5"),
    ]  # fmt: skip
    for run in runs:
        out, _ = run.communicate(timeout=120)
        assert run.returncode == 0, out
    check_report_folder(project / "rep")
    matrix = json.loads((project / "rep" / "matrix.json").read_text())
    samples = [json.loads(line) for line in (project / "rep" / "samples.jsonl").open()]
    (model,) = {m["name"] for m in matrix["models"]}
    assert {row["model"] for row in samples} == {model}
    assert f"| {model}" in (project / "rep" / "matrix.md").read_text()
