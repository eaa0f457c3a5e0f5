"""The README's first command, cold and cached, against the forward passes it cannot avoid.

    python benchmarks/cold_start.py [--repeats 3] [--device cuda]

Processes, alternating, in one invocation (medians reported):

- ``cold``: ``pytest --vl-bundled --vl-model=tiny --vl-report=DIR`` with an empty embedding
  cache (every scene rendered, every image and text encoded, the report written), as a new
  user's first run of the README's command.
- ``rerun``: the same command over the cache the last ``cold`` run filled.

And in this process, once: ``forward``, the model's forward passes alone over the same inputs,
in the engine's batches, on tensors rendered and preprocessed beforehand (nothing else timed).
``cold - forward`` is the part the tool adds around the model: rendering, decoding, hashing,
caching, collection, the report. Each process's peak memory comes from a wrapper process's
``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - started
print(code, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def run_suite(folder: Path, cache: Path, device: str) -> tuple[float, float, dict[str, list[int]]]:
    """(wall seconds, peak MB, per test: [n, passed]) of one run of the bundled suite."""
    report = folder / "report"
    command = [
        *(sys.executable, "-c", _WRAPPER, sys.executable, "-m", "pytest", "--vl-bundled"),
        *("--vl-model=tiny", f"--vl-report={report}", f"--vl-cache-dir={cache}"),
        f"--vl-device={device}",
        *("-p", "no:cacheprovider", "-q"),
    ]
    out = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=True).stdout
    code, wall, peak_kb = out.split()
    if code not in ("0", "1"):  # 1: tiny fails some tests, as README says
        raise SystemExit(f"the bundled suite exited with {code}")
    results = json.loads((report / "matrix.json").read_text())["results"]
    counts = {r["test"]: [r["n"], r["passed"]] for r in results}
    return float(wall), int(peak_kb) / 1024, counts


def forward_only(device: str) -> tuple[float, int, int]:
    """Seconds in ``tiny``'s forward passes over every unique image and text of the bundled
    suite on ``device``, in the engine's batch size; (seconds, images, texts)."""
    from pytest_vlcheck.checklist import load_checklist
    from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
    from pytest_vlcheck.images.loading import ImageLoader
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.models.registry import load_scorer, parse_spec
    from pytest_vlcheck.tasks import get_task

    refs, texts = {}, {}
    for path in sorted(bundled_checklists_dir().glob("*.yaml")):
        for test in load_checklist(path).tests:
            for example in test.examples:
                images, example_texts = get_task(test.task).grid(example)
                refs.update((ref.key, ref) for ref in images)
                texts.update(dict.fromkeys(example_texts))
    scorer = load_scorer(parse_spec("tiny"), ModelOptions(device=device, auto_batch=True))
    load = ImageLoader()
    pixels = [scorer.preprocess_image(load(ref)) for ref in refs.values()]
    size = scorer.batch_size
    text_list = list(texts)
    started = time.perf_counter()
    for start in range(0, len(pixels), size):
        scorer.encode_preprocessed(pixels[start : start + size])
    for start in range(0, len(text_list), size):
        scorer.encode_texts(text_list[start : start + size])
    return time.perf_counter() - started, len(pixels), len(text_list)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="auto", help="--vl-device of every run")
    args = parser.parse_args()
    cold, rerun, peaks = [], [], []
    verdicts: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.repeats):
            folder = Path(scratch) / str(index)
            folder.mkdir()
            wall, peak, counts = run_suite(folder, folder / "cache", args.device)
            cold.append(wall)
            peaks.append(peak)
            again, _, counts_again = run_suite(folder, folder / "cache", args.device)
            rerun.append(again)
            verdicts.add(json.dumps([counts, counts_again], sort_keys=True))
            print(
                f"run {index + 1}: cold {wall:.1f} s ({peak:.0f} MB), cached re-run {again:.2f} s"
            )
    if len(verdicts) != 1:
        raise SystemExit("runs disagree on n or passed: something is not deterministic")
    forward, images, texts = forward_only(args.device)
    median_cold = statistics.median(cold)
    rest = median_cold - forward
    print(f"forward passes alone: {forward:.1f} s ({images} images, {texts} texts)")
    print(
        f"cold run {median_cold:.1f} s = forward {forward:.1f} s + the rest {rest:.1f} s "
        f"({median_cold / forward:.2f}x the forward passes); peak {statistics.median(peaks):.0f} MB"
    )
    median_rerun = statistics.median(rerun)
    print(f"cached re-run {median_rerun:.2f} s ({median_rerun / median_cold:.3f}x cold)")


if __name__ == "__main__":
    main()
