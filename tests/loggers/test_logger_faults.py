"""Loggers that cannot write: refused at start-up (exit 4, one line naming the path, earlier
report byte-identical), or, when they break at the end, one line under the matrix with
pytest's summary printed; MLflow's names (``..`` segments, long names, prefixes that meet)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck import evaluate
from pytest_vlcheck.loggers.scalars import MAX_NAME, sanitised
from pytest_vlcheck.run.sinks import LoggingFailedWarning

MODEL = "--vl-model=py:colour_model:make"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    project = colour_project(pytester, CHECKLIST)
    project.runpytest(MODEL, "--vl-report=rep").assert_outcomes(passed=4, failed=1)
    return project


def _report(project: pytest.Pytester) -> dict[str, bytes]:
    folder = project.path / "rep"
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _refused(project: pytest.Pytester, log: str, message: str) -> None:
    before = _report(project)
    result = project.runpytest(MODEL, "--vl-report=rep", f"--vl-log={log}")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    result.stderr.fnmatch_lines([f"*--vl-log {log}: {message}*"])
    assert "Traceback" not in output
    assert _report(project) == before


def test_a_tensorboard_folder_under_a_file_is_refused(project: pytest.Pytester) -> None:
    (project.path / "notes.txt").write_text("mine")
    _refused(project, "tensorboard:notes.txt/tb", "notes.txt is a file, not a folder")
    assert (project.path / "notes.txt").read_text() == "mine"


def test_a_tensorboard_folder_whose_missing_parents_cannot_be_made(
    project: pytest.Pytester,
) -> None:
    (project.path / "notes.txt").write_text("")
    _refused(project, "tensorboard:notes.txt/a/b/tb", "notes.txt is a file, not a folder")


def test_a_missing_tensorboard_parent_is_made(project: pytest.Pytester) -> None:
    """Missing parents are made when the logger starts: not refused, and no traceback."""
    evaluate("py:colour_model:make", "checks.yaml", step=1, log="tensorboard:new/a/tb")
    assert list((project.path / "new" / "a" / "tb").glob("events.out.tfevents.*"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_parent_is_refused(project: pytest.Pytester) -> None:
    locked = project.mkdir("locked")
    locked.chmod(0o500)
    try:
        _refused(project, "tensorboard:locked/tb", "locked is read-only")
        _refused(project, "jsonl:locked/log.jsonl", "locked is read-only")
    finally:
        locked.chmod(0o700)


def test_a_dangling_jsonl_symlink_is_refused(project: pytest.Pytester) -> None:
    (project.path / "log.jsonl").symlink_to("gone/log.jsonl")
    _refused(project, "jsonl:log.jsonl", "log.jsonl is a symbolic link to gone/log.jsonl, which")


def test_a_jsonl_file_under_a_file_is_refused(project: pytest.Pytester) -> None:
    (project.path / "notes.txt").write_text("")
    _refused(project, "jsonl:notes.txt/log.jsonl", "notes.txt is a file, not a folder")


def test_a_broken_tensorboard_install_is_refused_at_start(project: pytest.Pytester) -> None:
    """A ``tensorboard`` package that is there but fails to import (a subprocess: the test
    process has the real one imported)."""
    package = project.mkdir("tensorboard")
    (package / "__init__.py").write_text("raise ImportError('protobuf is too new')\n")
    before = _report(project)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", MODEL, "--vl-report=rep"]
    done = subprocess.run(
        [*command, "--vl-log=tensorboard:tb"], cwd=project.path, capture_output=True, text=True
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert (
        "--vl-log tensorboard:tb: the tensorboard package cannot be imported (ImportError: "
        "protobuf is too new); expected a working install"
    ) in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert _report(project) == before


FAILS_AT_THE_END = """
import os


def pytest_collection_finish(session):
    os.mkdir("log.jsonl")  # after the start-up check: appending to it will fail
"""


def test_a_logger_failing_at_the_end_is_one_line_under_the_matrix(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(FAILS_AT_THE_END)
    result = project.runpytest(MODEL, "--vl-report=rep", "--vl-log=jsonl:log.jsonl")
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=4, failed=1)  # the tests' verdicts, as without a logger
    assert "Traceback" not in output and "INTERNALERROR" not in output
    lines = result.stdout.lines
    failure = [line for line in lines if line.startswith("logger jsonl:log.jsonl")]
    assert failure == [
        "logger jsonl:log.jsonl: could not log the run's numbers (IsADirectoryError: [Errno 21] "
        "Is a directory: 'log.jsonl'); expected a logger that can write (the report files "
        "were written)"
    ]
    assert lines.index(failure[0]) > next(
        i for i, line in enumerate(lines) if "vlcheck capability matrix" in line
    )
    assert "1 failed, 4 passed" in lines[-1]  # pytest's summary line, still printed
    assert (project.path / "rep" / "matrix.json").exists()


def test_evaluate_warns_in_one_line_and_returns_the_run(project: pytest.Pytester) -> None:
    def broken(scalars: dict[str, float], step: int | None) -> None:
        raise ConnectionError("tracking server down\nretry later")

    with pytest.warns(LoggingFailedWarning) as caught:
        run = evaluate("py:colour_model:make", "checks.yaml", log=broken, report_dir="api")
    assert run.results and (project.path / "api" / "matrix.json").exists()
    (warning,) = caught
    assert str(warning.message) == (
        "logger broken: could not log the run's numbers (ConnectionError: tracking server "
        "down); expected a logger that can write (the report files were written)"
    )


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("vlcheck/attribute/color/../pass_rate", "vlcheck/attribute/color/__/pass_rate"),
        ("vlcheck/./x/.../pass_rate", "vlcheck/_/x/.../pass_rate"),
        ("../x/..", "__/x/__"),
        ("a..b/..c", "a..b/..c"),
    ],
)
def test_dot_segments_are_sanitised(name: str, clean: str) -> None:
    assert sanitised(name) == clean


def test_a_long_name_is_shortened_with_a_stable_hash() -> None:
    long = "vlcheck/attribute/" + "x" * 300 + "/pass_rate"
    other = "vlcheck/attribute/" + "x" * 300 + "/pass_rats"
    short = sanitised(long)
    assert len(short) == MAX_NAME
    assert short == "vlcheck/attribute/" + "x" * 223 + "-" + short[-8:]
    assert short[-8:] == "547e3dc3"  # the same on every run and machine
    assert sanitised(other) != short and sanitised(short) == short


DOTS_AND_LENGTH = CHECKLIST.replace("  - id: hard\n", "  - id: '..'\n").replace(
    "  - id: pick\n", f"  - id: {'p' * 260}\n"
)

MLFLOW_RUN = """
import json, mlflow
from pytest_vlcheck import evaluate

with mlflow.start_run() as active:
    run = evaluate("py:colour_model:make", "checks.yaml", step=3, log="mlflow")
client = mlflow.tracking.MlflowClient()
logged = {name: client.get_metric_history(active.info.run_id, name)[0].value
          for name in run.scalars()}
with open("mlflow.json", "w") as handle:
    json.dump(logged, handle)
"""


def test_mlflow_takes_dot_segments_and_long_test_ids(pytester: pytest.Pytester) -> None:
    project = colour_project(pytester, DOTS_AND_LENGTH)
    (project.path / "mlflow_run.py").write_text(MLFLOW_RUN)
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"file:{project.path / 'mlruns'}",
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "PYTHONPATH": os.pathsep.join([".", os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "mlflow_run.py"], cwd=project.path, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    names = set(json.loads((project.path / "mlflow.json").read_text()))
    assert "vlcheck/relation/spatial/__/pass_rate" in names
    assert any(
        len(name) == MAX_NAME and name.startswith("vlcheck/attribute/color/ppp") for name in names
    )


def test_models_whose_prefixes_meet_are_refused_naming_both(project: pytest.Pytester) -> None:
    before = _report(project)
    result = project.runpytest(
        "--vl-model=m+1=py:colour_model:make",
        "--vl-model=m@1=py:colour_model:make",
        "--vl-report=rep",
        "--vl-log=jsonl:log.jsonl",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vl-log: models 'm+1' and 'm@1' would both be logged under the prefix 'm_1'; *"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert _report(project) == before and not (project.path / "log.jsonl").exists()
