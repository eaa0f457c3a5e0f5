"""Experiment loggers: the scalar names (hand-checked), the one-line refusals of bad specs, and
each logger read back with its own library: TensorBoard's EventAccumulator, MLflow's client,
W&B's offline run file; pytest's ``--vl-log``/``--vl-step`` log what ``evaluate`` logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from helpers.colour_project import CHECKLIST, colour_project
from helpers.result_rows import gate_row, result_row

from pytest_vlcheck import evaluate
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.loggers import LoggerSpecError, check_logger_spec, model_scalars, prefixed
from pytest_vlcheck.loggers.scalars import sanitised
from pytest_vlcheck.results import CapabilityResult


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def test_scalars_are_named_per_test_and_summarised_by_hand() -> None:
    results = [
        result_row("color", "attribute/color", "passed", 4, 3),
        result_row("size:big", "attribute/size", "failed", 5, 1, gate=gate_row(True)),
        result_row("broken", "attribute/size", "error", 0, 0),
        result_row("skipped", "object", "skipped", 0, 0),
    ]
    assert model_scalars(results) == {
        "vlcheck/attribute/color/color/pass_rate": 0.75,
        "vlcheck/attribute/size/size_big/pass_rate": 0.2,
        "vlcheck/summary/tests": 2.0,
        "vlcheck/summary/tests_passed": 1.0,
        "vlcheck/summary/tests_failed": 1.0,
        "vlcheck/summary/tests_errored": 1.0,
        "vlcheck/summary/mean_pass_rate": pytest.approx((0.75 + 0.2) / 2),
        "vlcheck/summary/gate_regressions": 1.0,
    }
    # every test errored (a wrong tokenizer in a training loop): the summary still says so
    assert model_scalars([result_row("broken", "a", "error", 0, 0)]) == {
        "vlcheck/summary/tests": 0.0,
        "vlcheck/summary/tests_passed": 0.0,
        "vlcheck/summary/tests_failed": 0.0,
        "vlcheck/summary/tests_errored": 1.0,
        "vlcheck/summary/gate_regressions": 0.0,
    }
    assert model_scalars([result_row("skipped", "a", "skipped", 0, 0)]) == {}


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("vlcheck/a b/c-d.e_f", "vlcheck/a b/c-d.e_f"),
        ("/vlcheck//x:y/", "vlcheck/x_y"),
        ("run@epoch_2/vlcheck", "run_epoch_2/vlcheck"),
        ("é(ü)", "____"),
    ],
)
def test_names_keep_to_what_mlflow_accepts(name: str, clean: str) -> None:
    assert sanitised(name) == clean


def test_two_tests_meeting_in_one_name_are_an_error_naming_both() -> None:
    one = result_row("a:b", "x", "passed", 2, 2)
    other = CapabilityResult(**{**one.__dict__, "file": "other.yaml", "test": "a?b"})
    with pytest.raises(VlcheckUserError, match=r"checks.yaml::a:b and other.yaml::a\?b"):
        model_scalars([one, other])


def test_several_models_are_prefixed() -> None:
    assert prefixed("run@epoch_2", {"vlcheck/x": 1.0}) == {"run_epoch_2/vlcheck/x": 1.0}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tensorbored:x", "unknown logger 'tensorbored'; expected one of tensorboard:DIR"),
        ("tensorboard", "no DIR given; expected tensorboard:DIR"),
        ("wandb:project", "wandb takes no argument"),
        (42, "42: not a logger"),
        ("jsonl:missing/folder/x.jsonl", "folder missing/folder does not exist"),
    ],
)
def test_a_bad_spec_is_one_line_naming_the_option(spec: object, message: str) -> None:
    with pytest.raises(LoggerSpecError, match=r"^--vl-log ") as info:
        check_logger_spec(spec, "--vl-log")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_paths_of_the_wrong_kind_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(LoggerSpecError, match="is a file; expected a folder"):
        check_logger_spec(f"tensorboard:{tmp_path / 'file'}", "log")
    with pytest.raises(LoggerSpecError, match="is a folder; expected a file"):
        check_logger_spec(f"jsonl:{tmp_path}", "log")


def test_wandb_online_without_a_key_and_a_bad_mlflow_uri_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    with pytest.raises(LoggerSpecError, match="W&B is online and has no API key"):
        check_logger_spec("wandb", "log")
    monkeypatch.setenv("WANDB_MODE", "offline")
    check_logger_spec("wandb", "log")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "ftp://host/x")
    with pytest.raises(LoggerSpecError, match="MLFLOW_TRACKING_URI 'ftp://host/x' has an unknown"):
        check_logger_spec("mlflow", "log")


def test_evaluate_refuses_a_bad_logger_before_scoring(project: pytest.Pytester) -> None:
    with pytest.raises(VlcheckUserError, match=r"^log nope: unknown logger 'nope'"):
        evaluate("py:colour_model:make", "checks.yaml", log="nope")
    with pytest.raises(VlcheckUserError, match=r"^step is 'x'; expected a whole number"):
        evaluate("py:colour_model:make", "checks.yaml", step="x")


def test_a_callable_and_jsonl_get_the_runs_scalars(project: pytest.Pytester) -> None:
    seen: list[tuple[dict, int | None]] = []
    run = evaluate(
        "py:colour_model:make",
        "checks.yaml",
        step=3,
        log=[lambda scalars, step: seen.append((scalars, step)), "jsonl:log.jsonl"],
    )
    assert seen == [(run.scalars(), 3)]
    lines = (project.path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"step": 3, "scalars": run.scalars()}]


def test_pytest_logs_the_names_evaluate_logs(project: pytest.Pytester) -> None:
    run = evaluate("py:colour_model:make", "checks.yaml", step=7, log="jsonl:api.jsonl")
    result = project.runpytest(
        "--vl-model=py:colour_model:make", "--vl-log=jsonl:cli.jsonl", "--vl-step=7"
    )
    result.assert_outcomes(passed=4, failed=1)
    api = json.loads((project.path / "api.jsonl").read_text())
    cli = json.loads((project.path / "cli.jsonl").read_text())
    assert api == cli == {"step": 7, "scalars": run.scalars()}


def test_pytest_refuses_a_bad_step_and_logger_as_usage_errors(project: pytest.Pytester) -> None:
    result = project.runpytest("--vl-model=py:colour_model:make", "--vl-step=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vl-step is 'soon'; expected a whole number from 0 to 2**63 - 1"]
    )
    result = project.runpytest("--vl-model=py:colour_model:make", "--vl-log=tensorboard")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vl-log tensorboard: no DIR given; expected tensorboard:DIR*"])


def test_tensorboard_events_hold_every_scalar_at_its_step(project: pytest.Pytester) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    runs = [
        evaluate("py:colour_model:make", "checks.yaml", step=step, log="tensorboard:tb")
        for step in (10, 20)
    ]
    events = EventAccumulator(str(project.path / "tb"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == sorted(runs[0].scalars())
    for name, value in runs[0].scalars().items():
        assert [(e.step, e.value) for e in events.Scalars(name)] == [
            (10, pytest.approx(value)),
            (20, pytest.approx(runs[1].scalars()[name])),
        ]


MLFLOW_RUN = """
import json, mlflow
from pytest_vlcheck import evaluate

with mlflow.start_run() as active:
    run = evaluate("py:colour_model:make", "checks.yaml", step=4, log="mlflow")
client = mlflow.tracking.MlflowClient()
history = {
    name: [(m.step, m.value) for m in client.get_metric_history(active.info.run_id, name)]
    for name in run.scalars()
}
with open("mlflow.json", "w") as handle:
    json.dump({"scalars": run.scalars(), "history": history}, handle)
"""


def test_mlflow_gets_the_scalars_in_the_active_run(project: pytest.Pytester) -> None:
    """In a subprocess: importing mlflow into the test process breaks later in-process
    pytest runs (pytester drops the modules a test imported)."""
    (project.path / "mlflow_run.py").write_text(MLFLOW_RUN)
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"file:{project.path / 'mlruns'}",
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "PYTHONPATH": ".",
    }
    done = subprocess.run(
        [sys.executable, "mlflow_run.py"], cwd=project.path, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    logged = json.loads((project.path / "mlflow.json").read_text())
    assert logged["scalars"]
    for name, value in logged["scalars"].items():
        assert logged["history"][name] == [[4, pytest.approx(value)]]


def test_wandb_logs_into_the_active_run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged: list[tuple[dict, int | None]] = []
    fake = types.ModuleType("wandb")
    fake.run = types.SimpleNamespace(log=lambda data, step=None: logged.append((data, step)))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setenv("WANDB_MODE", "offline")
    run = evaluate("py:colour_model:make", "checks.yaml", step=5, log="wandb")
    assert logged == [(run.scalars(), 5)]


OFFLINE_WANDB = """
import json, wandb
from pytest_vlcheck import evaluate

active = wandb.init(project="vlcheck-test", dir=".")
try:
    run = evaluate("py:colour_model:make", "checks.yaml", step=6, log="wandb")
finally:
    active.finish()
with open("scalars.json", "w") as handle:
    json.dump(run.scalars(), handle)
"""


def test_a_real_offline_wandb_run_records_the_scalars(project: pytest.Pytester) -> None:
    """A smoke run of the real package, in a subprocess (wandb takes over the process's
    output streams): wandb 0.31 has no Python reader of its run files (its service is Go),
    so the scalars' names and JSON values are looked up in the run file's protobuf records,
    where strings are stored as they are."""
    (project.path / "offline_wandb.py").write_text(OFFLINE_WANDB)
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "PYTHONPATH": "."}
    done = subprocess.run(
        [sys.executable, "offline_wandb.py"], cwd=project.path, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    scalars = json.loads((project.path / "scalars.json").read_text())
    (run_file,) = (project.path / "wandb").glob("offline-run-*/run-*.wandb")
    assert any(not v.is_integer() for v in scalars.values())
    records = run_file.read_bytes()
    for name, value in scalars.items():
        assert name.encode() in records
        if not value.is_integer():  # whole numbers are written without a fraction
            assert json.dumps(value).encode() in records
