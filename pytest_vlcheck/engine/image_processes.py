"""Image worker processes for the loader threads, beside a model on an accelerator.

With the model on a GPU the host's cores are free for the images, but the loader threads
share one core wherever the work is Python (rendering the bundled scenes). ``ImageProcesses``
is a loader (``ref -> RGB image``, raising ``ImageUnavailable``) that hands each image to an
idle worker process (``images.worker``) and waits for its pixels; the thread then runs the
model's preprocessing as before. How many: ``preparation_cores``.

The workers are shared by the runs of a process (a training loop's calls, a session's
models) and ended at exit. A worker that dies is dropped with one warning and its image is
loaded in the thread; with none left, every image is.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import queue
import subprocess
import sys
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pytest_vlcheck.cores import machine_share, usable_cores
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.images.worker import ref_to_json

if TYPE_CHECKING:
    from PIL.Image import Image

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_START = (
    "import sys; sys.path.insert(0, {root!r}); import pytest_vlcheck; del sys.path[0]; "
    "from pytest_vlcheck.images.worker import main; main()"
)
"""The worker imports this very package (not another on the working directory's path),
with the rest of ``sys.path`` in its usual order."""


class ImageWorkerWarning(UserWarning):
    """An image worker process ended; its images are loaded in the parent."""


def preparation_cores(cap: int | None, environ: Mapping[str, str] | None = None) -> int:
    """Cores that prepare images beside a model on an accelerator (as many loader threads,
    and as many worker processes when two or more): this process's share of the cores it
    may run on, at most ``cap`` (``--vl-workers``)."""
    share = machine_share(usable_cores(), environ)
    return share if cap is None else max(1, min(cap, share))


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
            raise RuntimeError(f"image worker, loading {ref.describe()}: {header['error']}")
        data = stdout.read(header["bytes"])  # buffered: all of it, or less at the end
        if len(data) != header["bytes"]:
            raise BrokenPipeError("the worker ended")
        return Image.frombytes(header["mode"], tuple(header["size"]), data)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        return stdin, stdout

    def end(self) -> None:
        """Close its input (it exits at the end of it); kill it if it does not."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):  # a dead worker's pipe
                stdin.close()
        try:
            self.process.wait(timeout=5)
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
        from PIL import Image

        config = {
            "max_image_pixels": Image.MAX_IMAGE_PIXELS,
            "url_cache_dir": None if self.url_cache_dir is None else str(self.url_cache_dir),
        }
        command = [sys.executable, "-c", _START.format(root=PACKAGE_ROOT), json.dumps(config)]
        for _ in range(self.count):
            process = subprocess.Popen(  # a session of its own: the terminal's Ctrl-C
                command,  # goes to the run, which ends the workers
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
            self._workers.append(_Worker(process))
            self._idle.put(self._workers[-1])
        self._alive = self.count

    def __call__(self, ref: ImageRef) -> Image:
        """The RGB image of ``ref`` from an idle worker (from this thread when none is left)."""
        worker = self._idle.get()
        if worker is None:
            self._idle.put(None)
            return ImageLoader(self.url_cache_dir)(ref)
        try:
            image = worker.load(ref)
        except ImageUnavailable:
            self._idle.put(worker)
            raise
        except (OSError, ValueError):  # it ended mid-answer: a broken pipe, a cut line
            self._drop(worker)
            return ImageLoader(self.url_cache_dir)(ref)
        except BaseException:
            self._idle.put(worker)
            raise
        self._idle.put(worker)
        return image

    def _drop(self, worker: _Worker) -> None:
        """A dead worker is not given out again."""
        worker.end()
        with self._lock:
            self._alive -= 1
            left = self._alive
        warnings.warn(
            f"an image worker process ended (exit code {worker.process.returncode}); {left} "
            f"of {self.count} left, the rest of the images are loaded in this process",
            ImageWorkerWarning,
            stacklevel=2,
        )
        if left == 0:
            self._idle.put(None)

    def close(self) -> None:
        for worker in self._workers:
            worker.end()
        self._workers.clear()
        self._idle.put(None)


_SHARED: dict[tuple[int, Path | None, Any], ImageProcesses] = {}


def shared_processes(count: int, url_cache_dir: Path | None) -> ImageProcesses:
    """The process's workers for ``count`` and ``url_cache_dir`` (and Pillow's pixel limit
    now), started on first use; others are ended."""
    from PIL import Image

    key = (count, url_cache_dir, Image.MAX_IMAGE_PIXELS)
    if key not in _SHARED:
        close_shared()
        _SHARED[key] = ImageProcesses(count, url_cache_dir)
    return _SHARED[key]


@atexit.register
def close_shared() -> None:
    """End the shared workers (at exit, or before others replace them)."""
    for processes in _SHARED.values():
        processes.close()
    _SHARED.clear()
