"""Run a script or ``-m`` module as ``python SCRIPT ARGS`` would, in a fresh process forked from
the preloaded forkserver of ``distributed_ranks.preloaded_forkserver``: the same ``__main__``
run, argv, working directory, environment and exit status, without importing torch, open_clip
and transformers again (~12 s of CPU per script). The processes a script starts itself (a
pytest run, a worker pool) start as they would for a user."""

from __future__ import annotations

import multiprocessing
import os
import runpy
import sys
from pathlib import Path

from helpers.distributed_ranks import preloaded_forkserver

TESTS = Path(__file__).resolve().parent.parent
TEST_PATHS = {TESTS, TESTS.parent}
"""What pyproject's ``pythonpath`` adds to the test process's sys.path, not a user's."""


def _drop_the_test_paths(pythonpath: str) -> None:
    """sys.path as a fresh interpreter would have it: without ``TEST_PATHS`` unless the
    environment's PYTHONPATH names them."""
    kept = {Path(entry).resolve() for entry in pythonpath.split(os.pathsep) if entry}
    dropped = TEST_PATHS - kept
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() not in dropped]


def _main(target: str, args: list[str], cwd: str, env: dict[str, str], logs: str) -> None:
    """The child's body: stdout and stderr to files in ``logs`` (fds 1 and 2, so a script's
    own subprocesses write there too), then the script or module run as ``__main__``."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        descriptor = os.open(Path(logs, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(descriptor, fd)
        os.close(descriptor)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    _drop_the_test_paths(env.get("PYTHONPATH", ""))
    if target.startswith("-m "):
        module = target.removeprefix("-m ")
        sys.argv = [module, *args]
        sys.path.insert(0, cwd)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args]
        sys.path.insert(0, str(Path(target).parent))
        runpy.run_path(target, run_name="__main__")


def start_forked(
    target: str, args: list[str], cwd: Path, logs: Path, env: dict[str, str] | None = None
) -> multiprocessing.process.BaseProcess:
    """Start ``target`` (a script's path, or ``-m MODULE``) with ``args`` and ``env`` (this
    process's environment if None), its stdout and stderr written to the folder ``logs``
    (``output(logs)`` reads them); the started process."""
    logs.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context(preloaded_forkserver())
    child = context.Process(
        target=_main,
        args=(target, args, str(cwd), dict(os.environ if env is None else env), str(logs)),
    )
    child.start()
    return child


def output(logs: Path) -> tuple[str, str]:
    """The stdout and stderr a process of ``start_forked`` wrote so far."""
    stdout, stderr = (
        (logs / name).read_text(encoding="utf-8", errors="replace") for name in ("stdout", "stderr")
    )
    return stdout, stderr


def run_forked(
    target: str,
    args: list[str],
    cwd: Path,
    logs: Path,
    timeout: float,
    env: dict[str, str] | None = None,
    status: int = 0,
) -> str:
    """Run ``target`` as ``start_forked`` does; its stdout. It must exit with ``status`` within
    ``timeout`` seconds: the assertion's message carries stdout and stderr."""
    child = start_forked(target, args, cwd, logs, env)
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
    stdout, stderr = output(logs)
    assert child.exitcode == status, f"exit status {child.exitcode}:\n{stdout}\n{stderr}"
    return stdout
