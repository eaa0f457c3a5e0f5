"""pytest-xdist: ``-n 2`` writes what a serial run writes, and the controller prints the summed
stats line of its workers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.colour_project import CHECKLIST, COLOURS
from helpers.colour_scorer import SOURCE
from helpers.merge_runs import MODELS, SECOND
from PIL import Image

from pytest_vlcheck.engine.runner.stats import ScoringStats
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.report_hooks import STATS_KEY, ReportHooks
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ShardPlan
from pytest_vlcheck.run.session import VlcheckSession
from pytest_vlcheck.run.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
STATS_LINE = re.compile(r"\[(\w+)\] (\d+) images, (\d+) texts, 0 pairs in (\d+) model calls")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    images = pytester.mkdir("images")
    for name, rgb in COLOURS.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", checks=CHECKLIST, second=SECOND)
    return pytester


def stats_lines(result: pytest.RunResult) -> dict[str, tuple[int, ...]]:
    found = (STATS_LINE.search(line) for line in result.stdout.lines)
    return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in found if m}


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """In process for a serial run; a subprocess under xdist, whose workers import the scorer
    from the project folder."""
    if "-n" not in args:
        pytester.syspathinsert()
        return pytester.runpytest(*MODELS, "-p", "no:cacheprovider", *args)
    return pytester.runpytest_subprocess(*MODELS, "-p", "no:cacheprovider", "--rootdir=.", *args)


def test_two_workers_write_the_serial_report(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{project.path}:{ROOT}")
    run(project, "--vl-report=serial").assert_outcomes(passed=10, failed=2)
    result = run(project, "-n", "2", "--vl-report=parallel")
    result.assert_outcomes(passed=10, failed=2)
    for name in ("matrix.json", "samples.jsonl", "report.html"):
        serial = (project.path / "serial" / name).read_bytes()
        assert (project.path / "parallel" / name).read_bytes() == serial, name


def test_a_sharded_run_under_xdist_records_the_shard_plan(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller collects nothing: the plan comes from its workers, as the serial job
    computes it, so ``vlcheck merge`` can check the shards of a split."""
    monkeypatch.setenv("PYTHONPATH", f"{project.path}:{ROOT}")
    run(project, "--vl-shard=2/2", "--vl-report=serial")
    run(project, "-n", "2", "--vl-shard=2/2", "--vl-report=parallel")
    shards = [
        json.loads((project.path / name / "matrix.json").read_text())["run"]["shard"]
        for name in ("serial", "parallel")
    ]
    assert shards[0] == shards[1]
    assert {k: shards[0][k] for k in ("index", "count", "filled")} == {
        "index": 2,
        "count": 2,
        "filled": 2,
    }


def test_controller_prints_the_workers_stats(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file under ``--dist loadfile`` runs on one worker, whose cache encodes each unique
    input once as the serial run does: the summed counts equal the serial ones."""
    monkeypatch.setenv("PYTHONPATH", f"{project.path}:{ROOT}")
    serial = stats_lines(run(project, "checks.yaml", "--vl-no-cache"))
    parallel = stats_lines(
        run(project, "checks.yaml", "--vl-no-cache", "-n", "2", "--dist=loadfile")
    )
    assert set(serial) == set(parallel) == {"make", "second"}
    for model, (images, texts, _calls) in serial.items():
        assert parallel[model][:2] == (images, texts) == (3, 9)


def test_worker_stats_are_summed_per_model() -> None:
    hooks = ReportHooks(VlcheckSession(Settings()))
    first = {"m": {"images_encoded": 3, "model_seconds": 0.5, "encode_image_calls": 1}}
    second = {"m": {"images_encoded": 4, "model_seconds": 0.25}, "n": {"texts_encoded": 2}}
    shard = {"index": 2, "count": 3, "selection": "ab12", "filled": 3}
    answers = {"vqa_answers": {"n": "' Yes' after the generation prompt: tokens ['▁Yes']"}}
    for output in ({"stats": first, "shard": shard}, {"stats": second, **answers}, {}):
        hooks.pytest_testnodedown(SimpleNamespace(workeroutput={STATS_KEY: output}), None)
    hooks.pytest_testnodedown(SimpleNamespace(), "crashed")  # a worker that died sends nothing
    assert hooks.state.shard_plan == ShardPlan(2, 3, "ab12", 3)
    assert hooks.state.worker_stats == {
        "m": ScoringStats(images_encoded=7, model_seconds=0.75, encode_image_calls=1),
        "n": ScoringStats(texts_encoded=2),
    }
    assert hooks.state.finished().vqa_answers == answers["vqa_answers"]  # for the run block


@pytest.mark.parametrize(
    ("count", "worker", "device"),
    [
        (1, "gw3", "cuda"),
        (4, None, "cuda"),
        (4, "gw0", "cuda:0"),
        (4, "gw5", "cuda:1"),
        (2, "gw1", "cuda:1"),
        (8, "master", "cuda"),
    ],
)
def test_auto_device_spreads_workers_over_gpus(count: int, worker: str | None, device: str) -> None:
    from pytest_vlcheck.models.devices import auto_cuda_device

    assert auto_cuda_device(count, worker) == device


def test_results_of_one_line_are_ordered_by_test_however_workers_deliver_them() -> None:
    """A parametrised Python test evaluates on one line under several names."""
    rows = [
        CapabilityResult(
            "test_a.py",
            name,
            "attribute/color",
            "caption",
            "tiny",
            2,
            1,
            0.5,
            0.1,
            0.9,
            0.5,
            0.5,
            "passed",
            line=7,
        )
        for name in ("test_colour[1.5]", "test_colour[0.0]")
    ]
    settings = Settings(specs=(parse_spec("tiny"),))
    orders = [VlcheckSession(settings, results=list(r)).ordered() for r in (rows, rows[::-1])]
    assert [r.test for r in orders[0]] == [r.test for r in orders[1]]
    assert [r.test for r in orders[0]] == ["test_colour[0.0]", "test_colour[1.5]"]
