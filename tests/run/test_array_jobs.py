"""``--vl-shard=auto``: a Slurm array task or a Kubernetes completion index is one job of the
split (refused when it cannot be read exactly, never silently everything), the recipe in
docs/ci.md covers every job once, and the jobs merge into the serial run's matrix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck.cli import main
from pytest_vlcheck.run.sharding import Shard, ShardSpecError, parse_shard

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def _slurm(task: int, low: int, high: int, **extra: str) -> dict[str, str]:
    env = {
        "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_ARRAY_TASK_MIN": str(low),
        "SLURM_ARRAY_TASK_MAX": str(high),
        "SLURM_ARRAY_TASK_COUNT": str(high - low + 1),
        "SLURM_ARRAY_TASK_STEP": "1",
    }
    return env | extra


def test_a_slurm_array_task_is_its_offset_from_the_first_task() -> None:
    for low in (0, 1, 5):
        shards = [parse_shard("auto", _slurm(t, low, low + 3)) for t in range(low, low + 4)]
        assert [(s.index, s.count) for s in shards] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    shard = parse_shard("auto", _slurm(6, 5, 8))
    assert shard == Shard(2, 4, "Slurm array task 6 of 5-8")
    assert shard.header() == "vlcheck: --vl-shard=auto is job 2/4 (Slurm array task 6 of 5-8)"
    assert parse_shard("2/4").header() is None


def test_a_kubernetes_completion_index_counts_from_zero() -> None:
    env = {"JOB_COMPLETION_INDEX": "0", "VLCHECK_SHARD_COUNT": "3"}
    assert parse_shard("auto", env) == Shard(1, 3, "Kubernetes completion index 0 of 3")
    assert parse_shard("auto", env | {"JOB_COMPLETION_INDEX": "2"}).index == 3


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "neither a Slurm job array (SLURM_ARRAY_TASK_ID) nor a Kubernetes indexed Job"),
        (_slurm(4, 0, 12, SLURM_ARRAY_TASK_STEP="4", SLURM_ARRAY_TASK_COUNT="4"), "(step 4)"),
        (
            _slurm(3, 1, 7, SLURM_ARRAY_TASK_COUNT="3"),
            "task ids 1-7 (step 1) are not 3 consecutive",
        ),
        (
            _slurm(1, 1, 4, SLURM_ARRAY_TASK_MIN="x"),
            "SLURM_ARRAY_TASK_MIN is 'x'; expected a whole",
        ),
        ({"JOB_COMPLETION_INDEX": "1"}, "VLCHECK_SHARD_COUNT is not; expected it set"),
        ({"JOB_COMPLETION_INDEX": "3", "VLCHECK_SHARD_COUNT": "3"}, "3 is not below"),
        (_slurm(1, 1, 2) | {"JOB_COMPLETION_INDEX": "0"}, "both SLURM_ARRAY_TASK_ID and JOB_"),
    ],
)
def test_what_auto_cannot_read_exactly_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ShardSpecError, match=re.escape(message)):
        parse_shard("auto", env)


def _sbatch_recipe() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    (script,) = [b for b in blocks if "#SBATCH --array=" in b]
    return script


def test_the_documented_sbatch_array_runs_every_job_once_into_its_own_folder() -> None:
    script = _sbatch_recipe()
    low, high = map(int, re.search(r"#SBATCH --array=(\d+)-(\d+)\n", script).groups())  # type: ignore[union-attr]
    assert "--vl-shard=auto" in script
    shards = [parse_shard("auto", _slurm(task, low, high)) for task in range(low, high + 1)]
    assert sorted(s.index for s in shards) == list(range(1, high - low + 2))
    assert {s.count for s in shards} == {high - low + 1}
    report = re.search(r"--vl-report=(\S+)", script).group(1)  # type: ignore[union-attr]
    folders = {report.replace("$SLURM_ARRAY_TASK_ID", str(t)) for t in range(low, high + 1)}
    assert len(folders) == high - low + 1  # one report folder per task
    merged = re.search(r"vlcheck merge (\S+) -o", script).group(1)  # type: ignore[union-attr]
    assert all(Path(f).match(merged) for f in folders)  # the merge's glob takes them all
    assert "--dependency=afterany:$SLURM_ARRAY_JOB_ID" in script  # after failed gates too


def test_array_jobs_merge_into_the_serial_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    colour_project(pytester, CHECKLIST)
    model = "--vl-model=py:colour_model:make"
    pytester.runpytest(model, "--vl-report=serial").assert_outcomes(passed=4, failed=1)
    for task in (7, 8):  # an array 7-8: jobs 1 and 2 of 2
        for name, value in _slurm(task, 7, 8).items():
            monkeypatch.setenv(name, value)
        result = pytester.runpytest(model, "--vl-shard=auto", f"--vl-report=shard-{task}")
        result.stdout.fnmatch_lines([f"vlcheck: --vl-shard=auto is job {task - 6}/2 (*"])
    shards = [json.loads((pytester.path / f"shard-{t}/matrix.json").read_text()) for t in (7, 8)]
    assert all(doc["results"] for doc in shards)  # each job ran some of the tests
    assert main(["merge", "shard-7", "shard-8", "-o", "merged"]) == 0
    for name in ("matrix.json", "samples.jsonl"):
        merged = (pytester.path / "merged" / name).read_bytes()
        assert merged == (pytester.path / "serial" / name).read_bytes(), name


def test_auto_outside_an_array_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", checks=CHECKLIST)
    result = pytester.runpytest("--vl-model=tiny", "--vl-shard=auto")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vl-shard=auto: neither a Slurm job array*"])
