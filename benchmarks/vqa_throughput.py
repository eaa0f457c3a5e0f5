"""Pairs per second of a generative VLM scored by VQAScore (``vqa:``): batched vs one pair at a
time, and batched without sharing vision features between a batch's pairs on one image
(medians of ``--repeats`` alternating runs).

    python benchmarks/vqa_throughput.py                          # the tests' tiny LLaVA, CPU
    python benchmarks/vqa_throughput.py --width 1024 --layers 8 --image-size 224 \\
        --device cuda --pairs 2048 --batch-size 64               # a larger random LLaVA, GPU

The model is a random LLaVA (llama text, CLIP vision) built offline by the tests' builder
(``tests/helpers/vqa_builders.py``) and loaded through the ``vqa:DIR`` spec. Pairs: ``--images``
random images, each with ``--pairs / --images`` texts (a caption test's shape: one image, its
caption and negatives). Every method must give the same scores (max difference printed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.protocol import ModelOptions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.vqa_builders import build_llava  # the tests' builder, not a copy


def random_pairs(pairs: int, images: int) -> list[tuple[Image.Image, str]]:
    """``pairs`` (image, text) pairs on ``images`` seeded random images (a caption test's
    shape: one image, its caption and negatives)."""
    rng = np.random.default_rng(0)
    pictures = [
        Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)) for _ in range(images)
    ]
    per_image = max(1, pairs // images)
    return [
        (pictures[i // per_image % len(pictures)], f"a photo of thing {i} on the left")
        for i in range(pairs)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="runs per method (median)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16"))
    args = parser.parse_args()

    pairs = random_pairs(args.pairs, args.images)
    with tempfile.TemporaryDirectory() as folder:
        model_dir = build_llava(
            Path(folder) / "llava",
            width=args.width,
            layers=args.layers,
            image_size=args.image_size,
        )
        options = ModelOptions(
            device=args.device, batch_size=args.batch_size, precision=args.precision
        )
        scorer = vqa_backend.load(str(model_dir), options)
        scorer.score_pairs([pairs[0][0]], [pairs[0][1]])  # warm-up
        methods = {
            "batched": (True, False),
            "batched, vision per pair": (False, False),
            "one pair at a time": (True, True),
        }
        runs: dict[str, list[tuple[np.ndarray, float]]] = {name: [] for name in methods}
        for _ in range(args.repeats):  # alternating, so load on the machine hits all alike
            for name, (reuse, single) in methods.items():
                scorer.reuses_image_features = reuse
                runs[name].append(timed(scorer, pairs, one_at_a_time=single))
    results = {
        name: (got[0][0], float(np.median([rate for _, rate in got]))) for name, got in runs.items()
    }
    reference, base_rate = results["batched"]
    print(
        f"{len(pairs)} pairs, {args.images} images, batch {args.batch_size}, "
        f"width {args.width}, layers {args.layers}, {args.device} {args.precision}"
    )
    for name, (scores, rate) in results.items():
        difference = float(np.abs(scores - reference).max())
        print(
            f"{name:>26}: {rate:8.1f} pairs/s  ({rate / base_rate:5.2f}x batched; "
            f"max score difference {difference:.1e})"
        )


def timed(
    scorer: vqa_backend.VqaScorer, pairs: list[tuple[Image.Image, str]], *, one_at_a_time: bool
) -> tuple[np.ndarray, float]:
    """The scores and pairs per second of one way of scoring ``pairs``."""
    started = time.perf_counter()
    if one_at_a_time:
        scores = np.concatenate([scorer.score_pairs([image], [text]) for image, text in pairs])
    else:
        scores = scorer.score_pairs([image for image, _ in pairs], [text for _, text in pairs])
    _sync(scorer.device)
    return scores, len(pairs) / (time.perf_counter() - started)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
