"""Image worker processes for the loader threads, beside a model on an accelerator.

With the model on a GPU the host's cores are free for the images, but the loader threads
share one core wherever the work is Python (rendering the bundled scenes). ``ImageProcesses``
is a loader (``ref -> RGB image``, raising ``ImageUnavailable``) that hands each image to an
idle worker process (``images.worker``) and waits for its pixels; the thread then runs the
model's preprocessing as before. How many of each: ``preparation``.

The workers are shared by the runs of a process (a training loop's calls, a session's
models) and ended at exit; a process forked from it (a DataLoader's workers) lets go of its
copies of their pipes and starts its own if it needs some. A worker that dies is dropped
with one warning and its image is loaded in the thread; with none left, or when none can be
started, every image is.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pytest_vlcheck.cores import machine_share, rank_share, usable_cores
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.images.worker import ref_to_json

if TYPE_CHECKING:
    from PIL.Image import Image

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_START = (
    "import sys; sys.path[0] = {root!r}; import pytest_vlcheck; del sys.path[0]; "
    "from pytest_vlcheck.images.worker import main; main()"
)
"""The worker imports this very package, and nothing from the working directory (which
``python -c`` puts first on ``sys.path``), the rest of the path in its usual order."""
LOAD_THREADS = 8
"""Loader threads where nothing else sizes them (shared by the machine's torchrun ranks)."""
DEFAULT_MAX_WORKERS = 16
"""Worker processes without ``--vl-workers``: beyond about 16 the parent's hand-off (0.22 ms
of CPU per image) bounds the rate, and each worker holds about 20 MB."""
END_SECONDS = 5.0
"""How long ``close`` waits for the workers to exit at the end of their input."""


class ImageWorkerWarning(UserWarning):
    """An image worker process ended, or none could be started; the run's threads load."""


class WorkerError(RuntimeError):
    """A defect a worker reported while loading an image (its answer was read whole)."""


def preparation(cap: int | None, environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(loader threads, worker processes) beside a model on an accelerator.

    Processes: this process's share of its cores, at most ``cap`` (``--vl-workers``) or
    else ``DEFAULT_MAX_WORKERS``; none below two (one would only add a hand-off). Threads: as
    many, and without ``cap`` never fewer than the ``LOAD_THREADS`` the machine's torchrun
    ranks share (a URL download waits on the network, not on a core)."""
    share = machine_share(usable_cores(), environ)
    count = min(share, DEFAULT_MAX_WORKERS) if cap is None else max(1, min(cap, share))
    floor = rank_share(LOAD_THREADS, environ)
    threads = count if cap is not None else max(count, floor, 1)
    return threads, count if count >= 2 else 0


@dataclass
class _Worker:
    """One worker process and its pipes (used by one thread at a time)."""

    process: subprocess.Popen[bytes]

    def load(self, ref: ImageRef) -> Image:
        from PIL import Image

        stdin, stdout = self._pipes()
        stdin.write(ref_to_json(ref))
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise BrokenPipeError("the worker ended")
        header: dict[str, Any] = json.loads(line)
        if "unavailable" in header:
            raise ImageUnavailable(header["unavailable"])
        if "error" in header:
            raise WorkerError(f"image worker, loading {ref.describe()}: {header['error']}")
        data = stdout.read(header["bytes"])  # buffered: all of it, or less at the end
        if len(data) != header["bytes"]:
            raise BrokenPipeError("the worker ended")
        return Image.frombytes(header["mode"], tuple(header["size"]), data)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        return stdin, stdout

    def let_go(self) -> None:
        """Close this process's ends of the pipes: the worker exits at the end of its input."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError):  # a dead worker's pipe
                    pipe.close()

    def end(self, deadline: float) -> None:
        """Let go, wait for the exit until ``deadline`` (``time.monotonic``), else kill."""
        self.let_go()
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class ImageProcesses:
    """``count`` image workers loading as ``ImageLoader(url_cache_dir)`` would."""

    count: int
    url_cache_dir: Path | None
    _idle: queue.SimpleQueue[_Worker | None] = field(default_factory=queue.SimpleQueue, repr=False)
    """Idle workers; None once none is left (put back by each taker, so all see it)."""
    _alive: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _workers: list[_Worker] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        """Start the workers; if one cannot be started, end those that were and raise."""
        from PIL import Image

        config = {
            "max_image_pixels": Image.MAX_IMAGE_PIXELS,
            "url_cache_dir": None if self.url_cache_dir is None else str(self.url_cache_dir),
        }
        command = [sys.executable, "-c", _START.format(root=PACKAGE_ROOT), json.dumps(config)]
        try:
            for _ in range(self.count):
                process = subprocess.Popen(  # a session of its own: the terminal's Ctrl-C
                    command,  # goes to the run, which ends the workers
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    start_new_session=True,
                )
                self._workers.append(_Worker(process))
        except OSError:
            self.close()
            raise
        for worker in self._workers:
            self._idle.put(worker)
        self._alive = self.count

    def __call__(self, ref: ImageRef) -> Image:
        """The RGB image of ``ref`` from an idle worker (from this thread when none is left)."""
        worker = self._idle.get()
        if worker is None:
            self._idle.put(None)
            return ImageLoader(self.url_cache_dir)(ref)
        try:
            image = worker.load(ref)
        except (ImageUnavailable, WorkerError):  # an answer read whole: the worker is fine
            self._idle.put(worker)
            raise
        except (OSError, ValueError):  # it ended mid-answer: a broken pipe, a cut line
            self._drop(worker)
            return ImageLoader(self.url_cache_dir)(ref)
        except BaseException:  # anything else may leave part of an answer in the pipe
            self._drop(worker)
            raise
        self._idle.put(worker)
        return image

    def _drop(self, worker: _Worker) -> None:
        """A dead (or unreadable) worker is ended and not given out again; the waiting
        threads learn first, then the warning is given (it may be raised: ``-W error``)."""
        worker.end(time.monotonic() + END_SECONDS)
        with self._lock:
            self._alive -= 1
            left = self._alive
        if left == 0:
            self._idle.put(None)
        warnings.warn(
            f"an image worker process ended (exit code {worker.process.returncode}); {left} "
            f"of {self.count} left, the rest of the images are loaded in this process",
            ImageWorkerWarning,
            stacklevel=2,
        )

    def close(self) -> None:
        """End every worker: all let go first, then one shared wait."""
        for worker in self._workers:
            worker.let_go()
        deadline = time.monotonic() + END_SECONDS
        for worker in self._workers:
            worker.end(deadline)
        self._workers.clear()
        self._idle.put(None)


_SHARED: dict[tuple[int, Path | None, Any], ImageProcesses] = {}
_SHARED_LOCK = threading.Lock()


def shared_processes(count: int, url_cache_dir: Path | None) -> ImageProcesses | None:
    """The process's workers for ``count`` and ``url_cache_dir`` (and Pillow's pixel limit
    now), started on first use, others ended; None, with a warning, when they cannot be
    started (a limit on processes): the threads then load."""
    from PIL import Image

    key = (count, url_cache_dir, Image.MAX_IMAGE_PIXELS)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _close_all()
            try:
                _SHARED[key] = ImageProcesses(count, url_cache_dir)
            except OSError as exc:
                warnings.warn(
                    f"no image worker processes ({exc}); images are loaded in this process",
                    ImageWorkerWarning,
                    stacklevel=2,
                )
                return None
        return _SHARED[key]


@atexit.register
def close_shared() -> None:
    """End the shared workers (at exit)."""
    with _SHARED_LOCK:
        _close_all()


def _close_all() -> None:
    for processes in _SHARED.values():
        processes.close()
    _SHARED.clear()


def _forget_in_child() -> None:
    """In a forked child: close its copies of the workers' pipes (the parent's close must
    still end them) and forget them; the child starts its own if it needs some (with a
    lock of its own: the parent may have held this one while forking)."""
    global _SHARED_LOCK
    _SHARED_LOCK = threading.Lock()
    for processes in _SHARED.values():
        for worker in processes._workers:
            worker.let_go()
    _SHARED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
