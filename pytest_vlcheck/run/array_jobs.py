"""``--vl-shard=auto``: which job of a scheduler's array this process is, from its environment.

A Slurm job array (``sbatch --array=1-8``) gives each task ``SLURM_ARRAY_TASK_ID``, ``_MIN``,
``_MAX`` and ``_COUNT``: the task is job ``ID - MIN + 1`` of ``COUNT``. An array with a step
or gaps (``--array=0-15:4``, ``--array=1,3,7``) is refused: its ids are not one run of
numbers, so ``ID - MIN + 1`` would skip jobs and leave their tests unrun. A Kubernetes
indexed Job gives each pod ``JOB_COMPLETION_INDEX`` (from 0) but not the Job's
``completions``: the count is ``VLCHECK_SHARD_COUNT``, which the pod template sets to the
same number. Neither, or both at once, is refused: ``auto`` never silently runs everything.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_vlcheck import bounds
from pytest_vlcheck.errors import VlcheckUserError

COUNT_VARIABLE = "VLCHECK_SHARD_COUNT"
SLURM = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX")
MAX_JOBS = 1_000_000


class ArrayJobError(VlcheckUserError):
    """``--vl-shard=auto`` outside a job array it can read, or in one it cannot split by."""


def _number(environ: Mapping[str, str], name: str) -> int:
    try:
        return bounds.whole_number(environ.get(name, ""), 0, 2**31)
    except bounds.BoundError:
        raise ArrayJobError(
            f"--vl-shard=auto: {name} is {bounds.shown(environ.get(name))}; expected a whole "
            "number, as the scheduler sets it"
        ) from None


def array_job(environ: Mapping[str, str]) -> tuple[int, int, str]:
    """(job index from 1, job count, where they came from in words)."""
    slurm = "SLURM_ARRAY_TASK_ID" in environ
    kubernetes = "JOB_COMPLETION_INDEX" in environ
    if slurm and kubernetes:
        raise ArrayJobError(
            "--vl-shard=auto: both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set; "
            "expected one scheduler's job array (or --vl-shard K/N)"
        )
    if slurm:
        return _slurm(environ)
    if kubernetes:
        return _kubernetes(environ)
    raise ArrayJobError(
        "--vl-shard=auto: neither a Slurm job array (SLURM_ARRAY_TASK_ID) nor a Kubernetes "
        "indexed Job (JOB_COMPLETION_INDEX) is in the environment; expected one, or "
        "--vl-shard K/N"
    )


def _slurm(environ: Mapping[str, str]) -> tuple[int, int, str]:
    task, low, high = (_number(environ, name) for name in SLURM)
    count = _number(environ, "SLURM_ARRAY_TASK_COUNT")
    step = environ.get("SLURM_ARRAY_TASK_STEP", "1")
    if step != "1" or high - low + 1 != count or not low <= task <= high:
        raise ArrayJobError(
            f"--vl-shard=auto: the Slurm array's task ids {low}-{high} (step {step}) are not "
            f"{count} consecutive numbers; expected an array like --array=1-{count}, or "
            "--vl-shard K/N"
        )
    return task - low + 1, count, f"Slurm array task {task} of {low}-{high}"


def _kubernetes(environ: Mapping[str, str]) -> tuple[int, int, str]:
    index = _number(environ, "JOB_COMPLETION_INDEX")
    if COUNT_VARIABLE not in environ:
        raise ArrayJobError(
            f"--vl-shard=auto: JOB_COMPLETION_INDEX is set but {COUNT_VARIABLE} is not; "
            "expected it set to the Job's completions in the pod template"
        )
    count = _number(environ, COUNT_VARIABLE)
    if not index < count <= MAX_JOBS:
        raise ArrayJobError(
            f"--vl-shard=auto: JOB_COMPLETION_INDEX {index} is not below {COUNT_VARIABLE} "
            f"{count}; expected the Job's completions as the count"
        )
    return index + 1, count, f"Kubernetes completion index {index} of {count}"
