"""Scoring throughput on SugarCrepe-shaped data: a bare script vs the plugin vs a per-example loop.

    python benchmarks/scoring_throughput.py                       # small ViT, ~2 min on 2 CPUs
    python benchmarks/scoring_throughput.py --examples 7511 --images 1560 --arch ViT-B-32 \\
        --device cuda --precision bf16                            # SugarCrepe-sized, on a GPU

Data: synthetic 640x480 JPEGs under COCO file names and a caption test whose examples hold
one image, its caption and one hard negative (SugarCrepe's seven sets have 7,511 examples,
1,560 images and 11,844 unique texts; the defaults keep those proportions at a smaller size).
The model is a random open_clip model built from a config (``small``: a 4-layer ViT-B/32-
shaped model; ``micro``: one narrow layer, whose forward pass is almost free, which stands in
for a fast accelerator on a machine without one; or any open_clip architecture name), saved
as config JSON + safetensors and loaded by every method through the plugin's
``open_clip:CONFIG@WEIGHTS`` spec.

Rules (what makes ``plugin/bare`` the cost the plugin adds, and nothing else):

- the plugin fills a fresh, empty embedding cache at every repeat (it pays for hashing the
  images and writing the vectors, as a first run does); the model is loaded once, outside
  the timings, and shared by every method;
- the bare script decodes as the plugin does: the same decoder (the plugin's ``ImageLoader``
  and the scorer's ``preprocess_image`` / ``encode_preprocessed``, i.e. the same pixels and
  dtype), the same threads (on a CPU model one thread per core, each batch prepared and then
  encoded; on an accelerator ``preparation``'s threads two batches ahead of the model,
  loading through the same image worker processes), the
  same batch size (the scorer's, as the engine uses it) and the same precision;
- the methods alternate, ``--repeats`` times each, in one invocation; medians are reported,
  with ``plugin/bare`` side by side.

Methods:

- ``bare``: what a careful script does: decode + preprocess in threads, each unique image and
  text encoded once in batches, cosine scores in numpy.
- ``plugin``: the engine (``ModelRunner`` + ``judge_test``) on a freshly loaded checklist.
- ``loop``: one example at a time (load, preprocess, encode the image and its texts), the way
  research evaluators are written.
- ``rerun``: the cached re-run: a new runner from the spec alone over the cache the last
  ``plugin`` run filled; it must encode nothing and never build the model.

All methods must reach the same pass rate (printed), which checks that each did the work.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.engine import ModelRunner, judge_test
from pytest_vlcheck.engine.feed.pipeline import cpu_threads
from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.pool import preparation, shared_processes
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.tasks.caption.example import CaptionExample

SMALL_VIT: dict[str, Any] = {
    "embed_dim": 512,
    "vision_cfg": {"image_size": 224, "layers": 4, "width": 768, "patch_size": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8, "layers": 4},
}
# A model whose forward pass costs almost nothing, as on a fast accelerator: what is left of
# each method's wall time is decoding, preprocessing, tokenising and the plugin's own work.
MICRO_VIT: dict[str, Any] = {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 224, "layers": 1, "width": 64, "patch_size": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1},
}
CONFIGS = {"small": SMALL_VIT, "micro": MICRO_VIT}
NOUNS = ["man", "woman", "dog", "cat", "horse", "bus", "table", "pizza", "bench", "kite"]
ADJECTIVES = ["red", "blue", "green", "small", "large", "wooden", "white", "black", "old"]
VERBS = ["sits on", "stands near", "holds", "looks at", "runs past", "lies under"]


@dataclass
class Setup:
    """What every method shares: the test, the model spec and options, and the loaded model."""

    test: ChecklistTest
    spec: str
    options: ModelOptions
    scorer: Any
    cache_root: Path
    runs: int = 0

    def fresh_cache(self) -> Path:
        """A new, empty cache folder for a first run."""
        self.runs += 1
        return self.cache_root / f"run-{self.runs}"


def _phrase(rng: random.Random) -> tuple[str, str, str, str]:
    return rng.choice(ADJECTIVES), rng.choice(NOUNS), rng.choice(VERBS), rng.choice(NOUNS)


def write_data(folder: Path, examples: int, images: int, seed: int) -> Path:
    """Smooth random 640x480 JPEGs (photo-like sizes) and ``checks.yaml`` + ``examples.jsonl``."""
    rng = random.Random(seed)
    pixels = np.random.default_rng(seed)
    (folder / "val2014").mkdir()
    names = [f"val2014/COCO_val2014_{index:012d}.jpg" for index in range(images)]
    for name in names:
        small = pixels.integers(0, 255, (12, 16, 3), dtype=np.uint8)
        Image.fromarray(small).resize((640, 480), Image.BICUBIC).save(folder / name, quality=90)
    captions = {name: [_caption(_phrase(rng)) for _ in range(3)] for name in names}
    with (folder / "examples.jsonl").open("w", encoding="utf-8") as handle:
        for index in range(examples):
            name = names[index % images] if index < images else rng.choice(names)
            adjective, noun, verb, other = _phrase(rng)
            row = {
                "id": str(index),
                "image": name,
                "caption": rng.choice(captions[name]),
                "negatives": [f"a {adjective} {other} {verb} a {noun} #{index}"],
            }
            handle.write(json.dumps(row) + "\n")
    (folder / "checks.yaml").write_text(
        "vlcheck: 1\ntests:\n  - {id: sugarcrepe, capability: order/binding, task: caption,"
        " threshold: 0.0, examples: examples.jsonl}\n",
        encoding="utf-8",
    )
    return folder / "checks.yaml"


def _caption(parts: tuple[str, str, str, str]) -> str:
    adjective, noun, verb, other = parts
    return f"a {adjective} {noun} {verb} a {other}"


def write_model(folder: Path, arch: str, seed: int) -> str:
    """A random open_clip model as config JSON + safetensors; returns its ``open_clip:`` spec."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    config = CONFIGS.get(arch) or open_clip.get_model_config(arch)
    if config is None:
        raise SystemExit(f"unknown open_clip architecture {arch!r}")
    torch.manual_seed(seed)
    model = open_clip.CLIP(**config)
    (folder / "bench-clip.json").write_text(json.dumps(config), encoding="utf-8")
    state = {key: value.detach().contiguous() for key, value in model.state_dict().items()}
    save_file(state, str(folder / "bench-clip.safetensors"))
    return f"open_clip:{folder / 'bench-clip.json'}@{folder / 'bench-clip.safetensors'}"


def _texts(example: CaptionExample) -> tuple[str, ...]:
    return (*example.captions, *example.negatives)


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _pass_rate(test: ChecklistTest, image_vec: dict[Any, np.ndarray], text_vec: dict) -> float:
    correct = 0
    for example in test.examples:
        assert isinstance(example, CaptionExample)
        image = image_vec[example.image.key]
        true = float(np.float32(image @ text_vec[example.captions[0]]))
        correct += all(true > float(np.float32(image @ text_vec[n])) for n in example.negatives)
    return correct / len(test.examples)


def _lookahead(
    pool: ThreadPoolExecutor,
    work: Callable[[Any], Any],
    items: Sequence[Any],
    size: int,
    ahead: int,
) -> Iterator[list[Any]]:
    """Results of ``work`` in batches of ``size``, ``ahead`` batches in flight beyond the one
    consumed (0: each batch prepared, then consumed), as the engine's ``ImageFeed`` does."""
    batches = [items[start : start + size] for start in range(0, len(items), size)]
    pending = [[pool.submit(work, item) for item in batch] for batch in batches[:ahead]]
    for index in range(len(batches)):
        if index + ahead < len(batches):
            pending.append([pool.submit(work, item) for item in batches[index + ahead]])
        yield [future.result() for future in pending[index]]


def _loader_scheme(device: str) -> tuple[int, int, Any]:
    """The engine's loader threads, batches ahead and loader: on a CPU model one thread per
    core, none ahead (the forward pass takes every core), ``ImageLoader``; on an accelerator
    ``preparation``'s threads two batches ahead, through its image worker processes."""
    if device.split(":")[0] == "cpu":
        return cpu_threads(), 0, ImageLoader()
    threads, processes = preparation(None)
    workers = shared_processes(processes, None) if processes else None
    return threads, 2, workers or ImageLoader()


def bare_script(setup: Setup) -> float:
    """Decode + preprocess in threads, encode each unique input once in batches; pass rate."""
    import torch

    scorer = setup.scorer
    size = scorer.batch_size  # the batch the engine uses (``device_batch_size``)
    threads, ahead, load = _loader_scheme(str(scorer.device))
    refs = list({ex.image.key: ex.image for ex in setup.test.examples}.values())
    texts = list(
        dict.fromkeys(t for ex in setup.test.examples for t in (*ex.captions, *ex.negatives))
    )
    image_rows, text_rows = [], []
    with ThreadPoolExecutor(threads) as pool, torch.inference_mode():
        prepare = lambda ref: scorer.preprocess_image(load(ref))  # noqa: E731
        for batch in _lookahead(pool, prepare, refs, size, ahead):
            image_rows.append(scorer.encode_preprocessed(batch))
        for start in range(0, len(texts), size):
            tokens = scorer.tokenizer(texts[start : start + size]).to(scorer.device)
            text_rows.append(scorer.model.encode_text(tokens).float().cpu().numpy())
    image_vec = dict(zip((r.key for r in refs), _unit(np.concatenate(image_rows)), strict=True))
    text_vec = dict(zip(texts, _unit(np.concatenate(text_rows)), strict=True))
    return _pass_rate(setup.test, image_vec, text_vec)


def plugin_engine(setup: Setup) -> float:
    """The plugin's engine on the test, with the already loaded model and a fresh embedding
    cache (hashing and cache writes included); pass rate."""
    # The model load is left out, as for ``bare``.
    with EmbeddingCache(setup.fresh_cache()) as cache:
        runner = ModelRunner.for_scorer(
            parse_spec(setup.spec), setup.scorer, setup.options, ImageLoader(), cache=cache
        )
        runner.prepare([setup.test])
        return judge_test(setup.test, runner).pass_rate


def per_example_loop(setup: Setup) -> float:
    """One example at a time: load, preprocess, encode the image and its texts; pass rate."""
    import torch

    scorer, load = setup.scorer, ImageLoader()
    correct = 0
    with torch.inference_mode():
        for example in setup.test.examples:
            pixels = scorer.preprocess(load(example.image)).unsqueeze(0)
            image = scorer.model.encode_image(pixels.to(scorer.device, dtype=scorer.input_dtype))
            tokens = scorer.tokenizer([*example.captions, *example.negatives]).to(scorer.device)
            texts = scorer.model.encode_text(tokens)
            scores = _unit(texts.float().cpu().numpy()) @ _unit(image.float().cpu().numpy())[0]
            scores = scores.astype(np.float32)
            correct += bool(np.all(scores[0] > scores[1:]))
    return correct / len(setup.test.examples)


def unchanged_rerun(setup: Setup) -> float:
    """The cached re-run: a new runner from the spec over the last ``plugin`` run's cache;
    it must build no model and encode nothing."""
    with EmbeddingCache(setup.cache_root / f"run-{setup.runs}") as cache:
        runner = ModelRunner(parse_spec(setup.spec), setup.options, ImageLoader(), cache=cache)
        runner.prepare([setup.test])
        rate = judge_test(setup.test, runner).pass_rate
    if runner.stats.model_calls or runner.source.built:
        raise SystemExit(f"the cached re-run built the model or encoded: {runner.stats}")
    return rate


METHODS: dict[str, Callable[[Setup], float]] = {
    "bare": bare_script,
    "plugin": plugin_engine,
    "loop": per_example_loop,
    "rerun": unchanged_rerun,
}


def run(setup: Setup, methods: list[str], repeats: int) -> dict[str, list[float]]:
    """Alternate the methods ``repeats`` times; wall seconds per run, pass rates checked."""
    walls: dict[str, list[float]] = {name: [] for name in methods}
    rates: dict[str, float] = {}
    for _ in range(repeats):
        for name in methods:
            started = time.perf_counter()
            rates[name] = METHODS[name](setup)
            walls[name].append(time.perf_counter() - started)
    print("pass rates: " + ", ".join(f"{name} {rate:.4f}" for name, rate in rates.items()))
    return walls


def report(setup: Setup, walls: dict[str, list[float]]) -> None:
    """Medians, images/s and the ratios the issue asks for."""
    images = len({ex.image.key for ex in setup.test.examples})
    texts = len({t for ex in setup.test.examples for t in _texts(ex)})
    print(f"{len(setup.test.examples)} examples, {images} unique images, {texts} unique texts")
    medians = {name: statistics.median(values) for name, values in walls.items()}
    for name, values in walls.items():
        runs = " ".join(f"{v:.2f}" for v in values)
        rate = images / medians[name]
        print(f"{name:<7} median {medians[name]:7.2f} s  {rate:7.1f} images/s  (runs: {runs})")
    for top, bottom in (("plugin", "bare"), ("loop", "plugin"), ("rerun", "plugin")):
        # rerun/plugin is the cached re-run over the first run (cached/first)
        if top in medians and bottom in medians:
            ratio = medians[top] / medians[bottom]
            print(
                f"{top}/{bottom}: {ratio:.2f}x  ({top} {medians[top]:.2f} s, "
                f"{bottom} {medians[bottom]:.2f} s, medians of {len(walls[top])} alternating runs)"
            )


def profile_plugin(setup: Setup, top: int) -> None:
    """One more ``plugin`` run under cProfile: the ``top`` entries of the package by cumulative
    time (the model's forward passes show as ``encode_preprocessed`` / ``encode_texts``)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(plugin_engine, setup)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    stats.print_stats(r"pytest_vlcheck|sqlite3|hashlib|PIL", top)
    print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=600)
    parser.add_argument("--images", type=int, default=125)
    parser.add_argument(
        "--arch", default="small", help="'small', 'micro' (a near-free model) or an open_clip name"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    parser.add_argument(
        "--decode",
        default="cpu",
        choices=["cpu", "gpu"],
        help="the plugin's --vl-decode (gpu: compare the plugin with the floor measured part "
        "by part; bare and loop decode with PIL either way)",
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default="bare,plugin,loop,rerun")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=0, help="0: torch's default")
    parser.add_argument(
        "--profile", type=int, default=0, help="N: profile one more plugin run, top N entries"
    )
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    with tempfile.TemporaryDirectory(prefix="vlcheck-bench-") as tmp:
        folder = Path(tmp)
        checklist = write_data(folder, args.examples, args.images, args.seed)
        spec = write_model(folder, args.arch, args.seed)
        options = ModelOptions(args.device, args.batch_size, args.precision, decode=args.decode)
        runner = ModelRunner(parse_spec(spec), options, ImageLoader())
        test = load_checklist(checklist).tests[0]
        setup = Setup(test, spec, options, runner.source.scorer, folder / "caches")
        print(f"model {args.arch} on {args.device} ({args.precision}), batch {args.batch_size}")
        walls = run(setup, args.methods.split(","), args.repeats)
        report(setup, walls)
        if args.profile:
            profile_plugin(setup, args.profile)


if __name__ == "__main__":
    main()
