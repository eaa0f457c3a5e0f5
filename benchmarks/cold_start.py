"""The README's first command, cold, cached and on a second checkpoint, against the forward
passes it cannot avoid.

    python benchmarks/cold_start.py [--repeats 3] [--device cuda]

Processes, alternating, in one invocation (medians reported):

- ``cold``: ``pytest --vl-bundled --vl-model=tiny --vl-report=DIR`` with an empty cache
  folder (every scene rendered, every image and text encoded, the report written), as a new
  user's first run of the README's command.
- ``rerun``: the same command over the cache the last ``cold`` run filled.
- ``second``: a second checkpoint of ``tiny``'s architecture (its weights x 1.001, saved as
  ``open_clip:CONFIG@WEIGHTS`` and named ``tiny``) over that cache: no embedding is cached
  for these weights, every input is encoded, and the pixels come from the pixel cache the
  ``cold`` run filled (CI's case: every run a new checkpoint).

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
from pathlib import Path

_WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - started
print(code, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def run_suite(
    folder: Path, cache: Path, device: str, model: str = "tiny"
) -> tuple[float, float, dict[str, list[int]]]:
    """(wall seconds, peak MB, per test: [n, passed]) of one run of the bundled suite."""
    report = folder / "report"
    command = [
        *(sys.executable, "-c", _WRAPPER, sys.executable, "-m", "pytest", "--vl-bundled"),
        *(f"--vl-model={model}", f"--vl-report={report}", f"--vl-cache-dir={cache}"),
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


def second_checkpoint(folder: Path) -> str:
    """``tiny=open_clip:CONFIG@WEIGHTS`` of ``tiny``'s architecture with other weights (each
    floating tensor x 1.001): a new fingerprint, the same preprocessing."""
    from safetensors.numpy import load_file, save_file

    from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS

    weights = {
        name: (tensor * 1.001).astype(tensor.dtype) if tensor.dtype.kind == "f" else tensor
        for name, tensor in load_file(str(TINY_WEIGHTS)).items()
    }
    config = folder / "tiny.json"
    config.write_bytes(TINY_CONFIG.read_bytes())
    save_file(weights, str(folder / "tiny.safetensors"))
    return f"tiny=open_clip:{config}@{folder / 'tiny.safetensors'}"


def in_process(device: str, scratch: Path) -> dict[str, float]:
    """Seconds of ``tiny``'s forward passes over every unique image and text of the bundled
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
    scorer = load_scorer(parse_spec("tiny"), ModelOptions(device=device, auto_batch=True))
    load = ImageLoader()
    started = time.perf_counter()
    pixels = [scorer.preprocess_image(load(ref)) for ref in refs.values()]
    render = time.perf_counter() - started
    keys = [image_key(ref) for ref in refs.values()]
    namespace = transform_namespace(scorer, "cpu")
    assert namespace is not None, "tiny's preprocessing has no compact form"
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
    args = parser.parse_args()
    cold, rerun, second, peaks = [], [], [], []
    verdicts: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        other = second_checkpoint(Path(scratch))
        for index in range(args.repeats):
            folder = Path(scratch) / str(index)
            folder.mkdir()
            wall, peak, counts = run_suite(folder, folder / "cache", args.device)
            cold.append(wall)
            peaks.append(peak)
            again, _, counts_again = run_suite(folder, folder / "cache", args.device)
            rerun.append(again)
            verdicts.add(json.dumps([counts, counts_again], sort_keys=True))
            new, _, _ = run_suite(folder, folder / "cache", args.device, other)
            second.append(new)
            print(
                f"run {index + 1}: cold {wall:.1f} s ({peak:.0f} MB), cached re-run "
                f"{again:.2f} s, second checkpoint {new:.1f} s"
            )
        if len(verdicts) != 1:
            raise SystemExit("runs disagree on n or passed: something is not deterministic")
        timed = in_process(args.device, Path(scratch))
    forward = timed["forward"]
    median_cold = statistics.median(cold)
    print(
        f"forward passes alone: {forward:.1f} s ({timed['images']:.0f} images, "
        f"{timed['texts']:.0f} texts); the images rendered and preprocessed in one thread "
        f"{timed['render']:.2f} s, read back from the pixel cache {timed['read']:.2f} s"
    )
    print(
        f"cold run {median_cold:.1f} s = forward {forward:.1f} s + the rest "
        f"{median_cold - forward:.1f} s ({median_cold / forward:.2f}x the forward passes); "
        f"peak {statistics.median(peaks):.0f} MB"
    )
    median_rerun = statistics.median(rerun)
    print(f"cached re-run {median_rerun:.2f} s ({median_rerun / median_cold:.3f}x cold)")
    median_second = statistics.median(second)
    print(
        f"second checkpoint {median_second:.1f} s ({median_second / forward:.2f}x the forward "
        f"passes, {median_second / median_cold:.2f}x cold)"
    )


if __name__ == "__main__":
    main()
