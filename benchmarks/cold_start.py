"""The README's first command, cold, cached and on a second checkpoint, against the forward
passes it cannot avoid.

    python benchmarks/cold_start.py [--repeats 3] [--device cuda]
    python benchmarks/cold_start.py --arch random-224    # in_loop.py's 224-px random ViT

Processes, alternating, in one invocation (medians reported):

- ``cold``: ``pytest --vl-bundled --vl-model=tiny --vl-report=DIR`` with an empty cache
  folder (every scene rendered, every image and text encoded, the report written), as a new
  user's first run of the README's command.
- ``rerun``: the same command over the cache the last ``cold`` run filled.
- ``second``: a second checkpoint of ``tiny``'s architecture (its weights x 1.001, saved as
  ``open_clip:CONFIG@WEIGHTS`` and named ``tiny``) over that cache: no embedding is cached
  for these weights, every input is encoded, and the pixels come from the pixel cache the
  ``cold`` run filled (CI's case: every run a new checkpoint). Its ratios: pytest's session
  time, and the seconds from the first model call (the run's "encoding N images" log line)
  to the end, each against the seconds inside the model (the run's stats line), with the
  import of torch and open_clip by a fresh process beside them, and the session less that
  import: the libraries' own import is a floor no tool can lower (4.3 s against 8.1 s inside
  ``random-224`` on the 2-core machine: 0.53x), so the 1.5x goal is on the rest of the
  session, the part the tool adds around the model. With ``--arch random-224``
  the two checkpoints are two random initialisations of that 224-px configuration.

And in this process, once: ``forward``, the model's forward passes alone over the same inputs,
in the engine's batches, on tensors rendered and preprocessed beforehand (nothing else timed);
``render``, rendering and preprocessing those images (one thread); ``read``, reading the same
pixels back from a pixel cache (one thread). ``cold - forward`` is the part the tool adds
around the model: rendering, decoding, hashing, caching, collection, the report. Each
process's peak memory comes from a wrapper process's ``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_WRAPPER = """
import json, os, re, resource, subprocess, sys, threading, time
started = time.perf_counter()
child = subprocess.Popen(
    sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    env={**os.environ, "CI": "1"},
)
first_call = []
def watch():
    for line in child.stderr:
        if not first_call and re.search(r"\\] encoding \\d+ images", line):
            first_call.append(time.perf_counter())
thread = threading.Thread(target=watch)
thread.start()
out = child.stdout.read()
code = child.wait()
thread.join()
ended = time.perf_counter()
model = re.search(r"([0-9.]+) s in the model", out)
session = re.search(r" in ([0-9.]+)s", out)
print(json.dumps({
    "code": code, "wall": ended - started,
    "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "model": float(model.group(1)) if model else None,
    "session": float(session.group(1)) if session else None,
    "after_first_call": ended - first_call[0] if first_call else None,
}))
"""


@dataclass(frozen=True)
class SuiteRun:
    """One process running the bundled suite: its wall time and peak memory, pytest's
    session time, the stats line's seconds inside the model and the seconds from the first
    model call (its "encoding N images" log line) to the process's end (the report written)."""

    wall: float
    peak_mb: float
    session: float
    model: float
    after_first_call: float
    counts: dict[str, list[int]]


def run_suite(folder: Path, cache: Path, device: str, model: str) -> SuiteRun:
    """One run of the bundled suite on ``model`` with the cache folder ``cache``."""
    report = folder / "report"
    command = [
        *(sys.executable, "-c", _WRAPPER, sys.executable, "-m", "pytest", "--vl-bundled"),
        *(f"--vl-model={model}", f"--vl-report={report}", f"--vl-cache-dir={cache}"),
        f"--vl-device={device}",
        *("-p", "no:cacheprovider", "-q"),
    ]
    out = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=True).stdout
    timed = json.loads(out)
    if timed["code"] not in (0, 1):  # 1: a model fails some tests, as README says of tiny
        raise SystemExit(f"the bundled suite exited with {timed['code']}")
    results = json.loads((report / "matrix.json").read_text())["results"]
    return SuiteRun(
        wall=timed["wall"],
        peak_mb=timed["peak_kb"] / 1024,
        session=timed["session"],
        model=timed["model"] or 0.0,  # a cached re-run calls no model: no stats line
        after_first_call=timed["after_first_call"] or 0.0,
        counts={r["test"]: [r["n"], r["passed"]] for r in results},
    )


def import_seconds() -> float:
    """Seconds a fresh process takes to import torch and open_clip (what a run pays before
    its first model call, beside the model's own loading)."""
    code = "import time; t = time.perf_counter(); import open_clip; print(time.perf_counter() - t)"
    return float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )


def checkpoints(folder: Path, arch: str) -> tuple[str, str]:
    """Two ``--vl-model`` specs of one architecture with different weights (so the second has
    a new fingerprint and the same preprocessing): ``tiny`` and its weights x 1.001, or two
    random initialisations (seeds 0 and 1) of in_loop.py's 224-px ``random-224``."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    config = folder / f"{arch}.json"
    if arch == "tiny":
        from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS

        config.write_bytes(TINY_CONFIG.read_bytes())
        weights = {
            name: np.asarray(tensor * 1.001, dtype=tensor.dtype)
            if tensor.dtype.kind == "f"
            else tensor
            for name, tensor in load_file(str(TINY_WEIGHTS)).items()
        }
        save_file(weights, str(folder / "second.safetensors"))
        return "tiny", f"tiny=open_clip:{config}@{folder / 'second.safetensors'}"
    import open_clip
    import torch
    from in_loop import RANDOM_224
    from safetensors.torch import save_file as save_torch

    config.write_text(json.dumps(RANDOM_224))
    open_clip.add_model_config(config)
    specs = []
    for seed, name in enumerate(("first", "second")):
        torch.manual_seed(seed)
        model = open_clip.create_model(config.stem)
        save_torch(model.state_dict(), str(folder / f"{name}.safetensors"))
        specs.append(f"{arch}=open_clip:{config}@{folder / f'{name}.safetensors'}")
    return specs[0], specs[1]


def in_process(device: str, scratch: Path, spec: str) -> dict[str, float]:
    """Seconds of the forward passes of ``spec`` over every unique image and text of the bundled
    suite on ``device`` in the engine's batch size (``forward``), of rendering and
    preprocessing those images (``render``) and of reading their pixels back from a pixel
    cache (``read``); with the counts (``images``, ``texts``)."""
    from pytest_vlcheck.checklist import load_checklist
    from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
    from pytest_vlcheck.engine.scores.content_keys import image_key
    from pytest_vlcheck.engine.scores.pixel_cache import PixelCache, transform_namespace
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
    scorer = load_scorer(parse_spec(spec), ModelOptions(device=device, auto_batch=True))
    load = ImageLoader()
    started = time.perf_counter()
    pixels = [scorer.preprocess_image(load(ref)) for ref in refs.values()]
    render = time.perf_counter() - started
    keys = [image_key(ref) for ref in refs.values()]
    namespace = transform_namespace(scorer, "cpu")
    assert namespace is not None, f"{spec}'s preprocessing has no compact form"
    with PixelCache(scratch / "pixels") as cache:
        cache.put_many(namespace, dict(zip(keys, pixels, strict=True)))
        started = time.perf_counter()
        back = [cache.get_many(namespace, keys[i : i + 256]) for i in range(0, len(keys), 256)]
        read = time.perf_counter() - started
    assert sum(map(len, back)) == len(set(keys)), "the pixel cache lost images"
    size = scorer.batch_size
    text_list = list(texts)
    started = time.perf_counter()
    for start in range(0, len(pixels), size):
        scorer.encode_preprocessed(pixels[start : start + size])
    for start in range(0, len(text_list), size):
        scorer.encode_texts(text_list[start : start + size])
    forward = time.perf_counter() - started
    return {
        "forward": forward,
        "render": render,
        "read": read,
        "images": len(pixels),
        "texts": len(text_list),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="auto", help="--vl-device of every run")
    parser.add_argument("--arch", default="tiny", choices=("tiny", "random-224"))
    args = parser.parse_args()
    runs: dict[str, list[SuiteRun]] = {"cold": [], "rerun": [], "second": []}
    verdicts: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        first, other = checkpoints(Path(scratch), args.arch)
        for index in range(args.repeats):
            folder = Path(scratch) / str(index)
            folder.mkdir()
            for kind, spec in (("cold", first), ("rerun", first), ("second", other)):
                runs[kind].append(run_suite(folder, folder / "cache", args.device, spec))
            cold, rerun, second = (runs[kind][-1] for kind in ("cold", "rerun", "second"))
            verdicts.add(json.dumps([cold.counts, rerun.counts], sort_keys=True))
            print(
                f"run {index + 1}: cold {cold.wall:.1f} s ({cold.peak_mb:.0f} MB), cached "
                f"re-run {rerun.wall:.2f} s, second checkpoint {second.wall:.1f} s "
                f"({second.model:.1f} s in the model)"
            )
        if len(verdicts) != 1:
            raise SystemExit("runs disagree on n or passed: something is not deterministic")
        timed = in_process(args.device, Path(scratch), first)
        imports = statistics.median(import_seconds() for _ in range(args.repeats))
    report(runs, timed, imports)


def report(runs: dict[str, list[SuiteRun]], timed: dict[str, float], imports: float) -> None:
    """The medians, each against the time inside the model."""

    def median(kind: str, field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs[kind])

    forward, cold = timed["forward"], median("cold", "wall")
    print(
        f"forward passes alone: {forward:.1f} s ({timed['images']:.0f} images, "
        f"{timed['texts']:.0f} texts); the images rendered and preprocessed in one thread "
        f"{timed['render']:.2f} s, read back from the pixel cache {timed['read']:.2f} s"
    )
    print(
        f"cold run {cold:.1f} s = forward {forward:.1f} s + the rest {cold - forward:.1f} s "
        f"({cold / forward:.2f}x the forward passes); peak {median('cold', 'peak_mb'):.0f} MB"
    )
    rerun = median("rerun", "wall")
    print(f"cached re-run {rerun:.2f} s ({rerun / cold:.3f}x cold)")
    inside, session = median("second", "model"), median("second", "session")
    print(
        f"second checkpoint {median('second', 'wall'):.1f} s wall, pytest's session "
        f"{session:.1f} s = {session / inside:.2f}x its {inside:.1f} s in the model; "
        f"from the first model call to the end {median('second', 'after_first_call'):.1f} s = "
        f"{median('second', 'after_first_call') / inside:.2f}x; importing torch and open_clip "
        f"{imports:.1f} s (a fresh process); the session less that import "
        f"{session - imports:.1f} s = {(session - imports) / inside:.2f}x (goal: 1.5x)"
    )


if __name__ == "__main__":
    main()
