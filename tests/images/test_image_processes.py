"""Image worker processes beside a model on an accelerator: how many, the same pixels and
reasons as the loader in this process, a worker's death, Ctrl-C, and a run through them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from helpers.colour_project import CHECKLIST, colour_project
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.cores import machine_share, usable_cores
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.perturb import make_perturbation
from pytest_vlcheck.images.pool import (
    DEFAULT_MAX_WORKERS,
    LOAD_THREADS,
    ImageProcesses,
    ImageWorkerWarning,
    close_shared,
    preparation,
)
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable, canonical_scene

SCENE = canonical_scene(
    {
        "size": [64, 48],
        "background": "white",
        "objects": [{"shape": "circle", "color": "red", "size": 0.3, "position": [0.3, 0.5]}],
    }
)


def test_the_share_divides_the_cores_among_xdist_workers_and_torchrun_ranks() -> None:
    assert machine_share(16, {}) == 16
    assert machine_share(16, {"PYTEST_XDIST_WORKER_COUNT": "2"}) == 8
    assert machine_share(16, {"PYTEST_XDIST_WORKER_COUNT": "2", "LOCAL_WORLD_SIZE": "4"}) == 2
    assert machine_share(16, {"LOCAL_WORLD_SIZE": "32"}) == 1  # never none
    assert machine_share(16, {"LOCAL_WORLD_SIZE": "x"}) == 16  # not a count: not divided
    cores = min(usable_cores(), DEFAULT_MAX_WORKERS)
    assert preparation(None, {}) == (max(cores, LOAD_THREADS), cores if cores >= 2 else 0)
    assert preparation(1, {}) == (1, 0)  # one core: one thread, no hand-off to a process
    assert preparation(10**6, {"PYTEST_XDIST_WORKER_COUNT": "1000000"}) == (1, 0)
    one_core = {"PYTEST_XDIST_WORKER_COUNT": str(usable_cores())}
    assert preparation(None, one_core) == (LOAD_THREADS, 0)  # a URL download waits, no core
    assert preparation(None, {**one_core, "LOCAL_WORLD_SIZE": "4"}) == (LOAD_THREADS // 4, 0)


def _refs(tmp_path: Path) -> list[ImageRef]:
    image = tmp_path / "photo.png"
    Image.new("RGB", (40, 30), (10, 200, 30)).save(image)
    file = str(image)
    return [
        ImageRef("scene", SCENE, SCENE),
        ImageRef("scene", SCENE, SCENE, perturb=make_perturbation("noise", 0.05, 7)),
        ImageRef("file", "photo.png", file, crop=(0.25, 0.0, 0.5, 1.0), crop_relative=True),
        ImageRef("file", "photo.png", file),
    ]


@pytest.fixture
def workers() -> object:
    processes = ImageProcesses(2, None)
    yield processes
    processes.close()


def test_workers_give_the_pixels_the_loader_gives(workers: ImageProcesses, tmp_path: Path) -> None:
    loader = ImageLoader()
    for ref in _refs(tmp_path):
        got, expected = workers(ref), loader(ref)
        assert (got.mode, got.size) == (expected.mode, expected.size)
        assert got.tobytes() == expected.tobytes(), ref.describe()


def test_workers_give_the_loaders_reasons(workers: ImageProcesses, tmp_path: Path) -> None:
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg")
    for name in ("missing.png", "broken.jpg"):
        ref = ImageRef("file", name, str(tmp_path / name))
        with pytest.raises(ImageUnavailable) as expected:
            ImageLoader()(ref)
        with pytest.raises(ImageUnavailable) as got:
            workers(ref)
        assert got.value.reason == expected.value.reason
    assert workers(_refs(tmp_path)[0]).size == (64, 48)  # the worker still answers


def test_a_dead_worker_is_dropped_with_a_warning(workers: ImageProcesses, tmp_path: Path) -> None:
    ref = _refs(tmp_path)[0]
    expected = ImageLoader()(ref).tobytes()
    for worker in list(workers._workers):
        worker.process.kill()
        worker.process.wait()
        with pytest.warns(ImageWorkerWarning, match=r"ended \(exit code -9\)"):
            assert workers(ref).tobytes() == expected
    assert workers(ref).tobytes() == expected  # none left: loaded in this process


def test_workers_leave_ctrl_c_to_the_run(workers: ImageProcesses, tmp_path: Path) -> None:
    ref = _refs(tmp_path)[0]
    for worker in workers._workers:
        assert os.getpgid(worker.process.pid) != os.getpgid(0)  # out of the terminal's reach
        assert worker.load(ref).size == (64, 48)  # started: its handler is in place
        os.kill(worker.process.pid, signal.SIGINT)
    for _ in range(4):
        assert workers(ref).size == (64, 48)
    assert all(worker.process.poll() is None for worker in workers._workers)


def _worker_children() -> int:
    """Image worker processes whose parent is this process (Linux's /proc)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        count += parent == os.getpid() and b"pytest_vlcheck.images.worker" in command
    return count


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_a_run_beside_an_accelerator_loads_through_workers_with_the_same_results(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``py:`` scorer that names no device may use an accelerator: its images are
    prepared beside it, through worker processes from two cores on."""
    if usable_cores() < 2:
        pytest.skip("needs two cores")
    colour_project(pytester, CHECKLIST)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    close_shared()  # an earlier test's run may have started some
    one = evaluate("py:colour_model:make", "checks.yaml", no_cache=True, workers=1)
    assert _worker_children() == 0
    two = evaluate("py:colour_model:make", "checks.yaml", no_cache=True, workers=2)
    assert _worker_children() == 2
    assert one.to_json() == two.to_json()


def test_the_option_is_a_whole_number_of_cores() -> None:
    from pytest_vlcheck.errors import SettingsError
    from pytest_vlcheck.run.settings import KeywordOptions, build_settings

    assert build_settings(KeywordOptions({"workers": "3"})).model_options.workers == 3
    assert build_settings(KeywordOptions({})).model_options.workers is None
    for bad in (0, "x", 2000):
        with pytest.raises(SettingsError, match=r"^workers is .*; expected a whole number from 1"):
            build_settings(KeywordOptions({"workers": bad}))


def test_with_warnings_as_errors_a_dead_pool_still_loads(
    workers: ImageProcesses, tmp_path: Path
) -> None:
    """``-W error`` raises the drop's warning in a loader thread: the threads waiting for a
    worker must already know none is left, not wait for ever."""
    import threading
    import warnings

    ref = _refs(tmp_path)[0]
    for worker in list(workers._workers):
        worker.process.kill()
        worker.process.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImageWorkerWarning)
        for _ in range(2):
            with pytest.raises(ImageWorkerWarning):
                workers(ref)
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(workers(ref)), daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert done and done[0].size == (64, 48)  # type: ignore[attr-defined]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_lets_go_of_the_workers(tmp_path: Path) -> None:
    """A DataLoader's forked workers hold copies of the workers' pipes: they close them, so
    the parent's close still ends its workers at once; the child starts its own."""
    from pytest_vlcheck.images.pool import shared_processes

    close_shared()
    processes = shared_processes(2, None)
    assert processes is not None
    ref = _refs(tmp_path)[0]
    ours = [worker.process for worker in processes._workers]
    checked, release = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:  # the child: its own workers work; it lives on until the parent closed
        code = 0
        try:
            os.close(release[1])
            mine = shared_processes(2, None)
            code = int(mine is None or mine is processes or mine(ref).size != (64, 48))
            os.write(checked[1], b"x")
            os.read(release[0], 1)  # the end of the pipe: the parent has closed its workers
        finally:
            os._exit(code)
    os.close(checked[1])
    os.close(release[0])
    try:
        if os.read(checked[0], 1) == b"x":  # else the child failed: its status says so
            close_shared()  # while the child lives, holding what it did not let go of
    finally:
        os.close(checked[0])
        os.close(release[1])
        _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # each worker saw the end of its input and left: none waited out END_SECONDS and was
    # killed, which a pipe still open in the child would have made it do (a status of -9)
    assert [process.returncode for process in ours] == [0, 0]
