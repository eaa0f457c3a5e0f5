"""The tool's own image work (rendering the bundled suite's scenes, perturbing, decoding) in
threads against worker processes: what ``--vl-workers`` buys beside an accelerator.

    python benchmarks/image_workers.py [--workers N] [--repeats 3] [--limit 0]

Every unique image of the bundled suite is loaded as ``ImageLoader`` does it, by ``one
thread``, ``N threads`` and ``N threads`` each driving one of ``N worker processes``
(``engine.image_processes``, started before the timing), alternating, medians printed with
the ratio to one thread; the processes' pixels are checked equal to the thread's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
from pytest_vlcheck.cores import usable_cores
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.pool import ImageProcesses
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.run.checklists import checklist_files, load_tests
from pytest_vlcheck.tasks import get_task


def bundled_refs() -> list[ImageRef]:
    """Every unique image of the bundled suite, in plan order."""
    refs: dict[Any, ImageRef] = {}
    for test in load_tests(checklist_files([bundled_checklists_dir()]), None):
        for example in test.examples:
            for ref in get_task(test.task).grid(example)[0]:
                if isinstance(ref, ImageRef):
                    refs.setdefault(ref.key, ref)
    return list(refs.values())


def timed(load: Callable[[ImageRef], Any], refs: list[ImageRef], threads: int) -> float:
    started = time.perf_counter()
    if threads == 1:
        for ref in refs:
            load(ref)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(load, refs))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=usable_cores())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="first N images (0: all)")
    args = parser.parse_args()
    refs = bundled_refs()
    refs = refs[: args.limit] if args.limit else refs
    loader, processes = ImageLoader(), ImageProcesses(args.workers, None)
    try:
        sample = refs[:: max(1, len(refs) // 50)]
        assert all(processes(r).tobytes() == loader(r).tobytes() for r in sample), "pixels"
        methods = {
            "one thread": (loader, 1),
            f"{args.workers} threads": (loader, args.workers),
            f"{args.workers} worker processes": (processes, args.workers),
        }
        runs: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(args.repeats):
            for name, (load, threads) in methods.items():
                runs[name].append(timed(load, refs, threads))
    finally:
        processes.close()
    print(f"{len(refs)} images, {usable_cores()} usable cores, medians of {args.repeats}")
    base = statistics.median(runs["one thread"])
    for name, seconds in runs.items():
        median = statistics.median(seconds)
        print(f"{name:24} {median:6.2f} s  {median / base:5.2f}x one thread")


if __name__ == "__main__":
    main()
