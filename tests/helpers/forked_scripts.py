"""Run a script or ``-m`` module as ``python SCRIPT ARGS`` would, in a fresh process forked from
the preloaded forkserver of ``distributed_ranks.preloaded_forkserver``: the same ``__main__``
run, argv, sys.path, working directory, environment and exit status, without importing torch, open_clip
and transformers again (~12 s of CPU per script). The processes a script starts itself (a
pytest run, a worker pool) start as they would for a user."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import runpy
import subprocess
import sys
from pathlib import Path

from helpers.distributed_ranks import preloaded_forkserver


@functools.cache
def _fresh_path(environ: tuple[tuple[str, str], ...], cwd: str) -> tuple[str, ...]:
    """sys.path of a fresh interpreter started in ``cwd`` with the environment ``environ``,
    less its first entry (the script's folder, or the working directory for ``-m``): not the
    test process's, to which pyproject's ``pythonpath`` adds tests/ and the repository root."""
    code = "import json, sys; print(json.dumps(sys.path[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=dict(environ),
        capture_output=True,
        text=True,
        check=True,
    )
    return tuple(json.loads(done.stdout))


def _main(
    target: str, args: list[str], cwd: str, env: dict[str, str], path: list[str], logs: str
) -> None:
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
    for name in [name for name in sys.modules if name.partition(".")[0] == "helpers"]:
        del sys.modules[name]  # imported to unpickle this function: not a user's to import
    if target.startswith("-m "):
        module = target.removeprefix("-m ")
        sys.argv = [module, *args]
        sys.path[:] = [cwd, *path]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args]
        sys.path[:] = [str(Path(target).resolve().parent), *path]
        runpy.run_path(target, run_name="__main__")


def start_forked(
    target: str, args: list[str], cwd: Path, logs: Path, env: dict[str, str] | None = None
) -> multiprocessing.process.BaseProcess:
    """Start ``target`` (a script's path, or ``-m MODULE``) with ``args`` and ``env`` (this
    process's environment if None), its stdout and stderr written to the folder ``logs``
    (``output(logs)`` reads them); the started process."""
    logs.mkdir(parents=True, exist_ok=True)
    environ = dict(os.environ if env is None else env)
    path = list(_fresh_path(tuple(sorted(environ.items())), str(cwd)))
    context = multiprocessing.get_context(preloaded_forkserver())
    child = context.Process(target=_main, args=(target, args, str(cwd), environ, path, str(logs)))
    child.start()
    return child


def output(logs: Path) -> tuple[str, str]:
    """The stdout and stderr a process of ``start_forked`` wrote so far (empty before it
    opened them: a child that failed to start says why in this process's stderr)."""
    stdout, stderr = (
        (logs / name).read_text(encoding="utf-8", errors="replace")
        if (logs / name).exists()
        else ""
        for name in ("stdout", "stderr")
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
