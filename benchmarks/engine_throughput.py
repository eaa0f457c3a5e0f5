"""Time the engine on a generated suite of N caption examples and print what it costs.

    python benchmarks/engine_throughput.py --examples 2000 --model tiny --batch-size 64

The suite has N examples over N/4 unique image files (224x224 PNGs) and a vocabulary of
captions, so images and texts repeat across examples the way real checklists do. Prints
total wall time, time inside the model, images/s and texts/s, examples/s and model calls.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.checklist.writer import dump_checklist
from pytest_vlcheck.engine import ModelRunner, judge_test
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import parse_spec

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]
SHAPES = ["circle", "square", "triangle", "star", "cross", "heart"]


def write_suite(folder: Path, examples: int, seed: int) -> Path:
    """A checklist of ``examples`` caption examples over examples/4 image files."""
    rng = random.Random(seed)
    pixels = np.random.default_rng(seed)
    images = max(1, examples // 4)
    for index in range(images):
        array = pixels.integers(0, 255, (224, 224, 3), dtype=np.uint8)
        Image.fromarray(array).save(folder / f"img{index}.png")
    rows = []
    for index in range(examples):
        color, other = rng.sample(COLORS, 2)
        shape = rng.choice(SHAPES)
        rows.append(
            {
                "id": str(index),
                "image": f"img{rng.randrange(images)}.png",
                "caption": f"a {color} {shape}",
                "negatives": [f"a {other} {shape}"],
            }
        )
    doc = {
        "vlcheck": 1,
        "tests": [
            {
                "id": "bench",
                "capability": "attribute/color",
                "task": "caption",
                "threshold": 0.0,
                "examples": rows,
            }
        ],
    }
    path = folder / "bench.yaml"
    path.write_text(dump_checklist(doc), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--model", default="tiny", help="a --vl-model spec")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = write_suite(Path(folder), args.examples, args.seed)
        started = time.perf_counter()
        test = load_checklist(path).tests[0]
        loaded = time.perf_counter()
        runner = ModelRunner(
            parse_spec(args.model),
            ModelOptions(device=args.device, batch_size=args.batch_size),
            ImageLoader(),
        )
        runner.source.scorer  # noqa: B018 - load the model outside the timed scoring
        ready = time.perf_counter()
        runner.prepare([test])
        result = judge_test(test, runner)
        done = time.perf_counter()
    stats = runner.stats
    scoring = done - ready
    print(f"examples            {len(test.examples)}")
    print(f"unique images/texts {stats.images_encoded} / {stats.texts_encoded}")
    print(f"load checklist      {loaded - started:.2f} s")
    print(f"load model          {ready - loaded:.2f} s")
    print(f"score + verdict     {scoring:.2f} s ({len(test.examples) / scoring:.0f} examples/s)")
    print(f"inside the model    {stats.model_seconds:.2f} s")
    print(f"waiting for images  {stats.load_seconds:.2f} s")
    print(f"images/s            {stats.images_encoded / scoring:.1f}")
    print(f"texts/s             {stats.texts_encoded / scoring:.1f}")
    print(
        f"model calls         {stats.model_calls} (encode_images {stats.encode_image_calls}, "
        f"encode_texts {stats.encode_text_calls})"
    )
    print(f"pass rate           {result.pass_rate:.4f}")


if __name__ == "__main__":
    main()
