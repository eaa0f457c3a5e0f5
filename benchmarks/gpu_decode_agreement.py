"""How close ``--vl-decode gpu``'s model inputs are to PIL's: embeddings and verdicts.

    python benchmarks/gpu_decode_agreement.py                   # tiny, 200 JPEGs, on the CPU
    python benchmarks/gpu_decode_agreement.py --device cuda --images 1000
    python benchmarks/gpu_decode_agreement.py --folder DIR      # your own JPEGs

Encodes the same JPEG files twice with ``tiny`` (its shipped weights): through the CPU path
(PIL decode, open_clip's eval transform) and through the device path (``decode_jpeg`` on
``--device``, tensor resize + crop, the same normalisation), and prints the cosine of each
image's two embeddings (min, median) and the share of equal verdicts: each image's
best-scoring caption among ``--captions`` colour and shape captions, which is what a
``caption`` test decides. Decoding alone is also compared with PIL's pixels (equal share).
Without ``--folder`` the images are synthetic photos (smooth gradients, shapes and noise,
saved as baseline JPEGs at quality 90).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

CAPTIONS = [
    f"a {colour} {shape}"
    for colour in ("red", "green", "blue", "yellow", "white", "black")
    for shape in ("circle", "square", "triangle", "star")
]


def synthetic(folder: Path, count: int) -> list[Path]:
    """``count`` photo-like JPEGs of varied sizes in ``folder``."""
    rng = np.random.default_rng(0)
    paths = []
    for index in range(count):
        width, height = (int(v) for v in rng.integers(64, 640, 2))
        y, x = np.mgrid[0:height, 0:width]
        tint = rng.uniform(0, 255, 3)
        base = np.stack(
            [x * tint[0] / width, y * tint[1] / height, (x + y) * tint[2] / 2 / (width + height)],
            -1,
        )
        noise = rng.normal(0, 10, (height, width, 3))
        image = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))
        box = sorted(rng.integers(0, width, 2)) + sorted(rng.integers(0, height, 2))
        ImageDraw.Draw(image).ellipse(
            (box[0], box[2], box[1], box[3]), fill=tuple(rng.integers(0, 256, 3))
        )
        path = folder / f"{index:05d}.jpg"
        image.save(path, quality=90)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()

    from pytest_vlcheck.engine.feed.on_device import DeviceDecode
    from pytest_vlcheck.models.backends.open_clip import load
    from pytest_vlcheck.models.pixels.device_transform import decode_jpegs, fallback_reason
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.tiny import TINY_SPEC

    scorer = load(TINY_SPEC.removeprefix("open_clip:"), ModelOptions(device=args.device))
    device = DeviceDecode.for_scorer(scorer, "tiny")
    assert device is not None
    with tempfile.TemporaryDirectory() as tmp:
        found = (
            sorted(args.folder.glob("*.jp*g")) if args.folder else synthetic(Path(tmp), args.images)
        )
        paths = [str(p) for p in found if fallback_reason(str(p)) is None]
        started = time.perf_counter()
        by_pil = scorer.encode_preprocessed([scorer.preprocess_image(_open(p)) for p in paths])
        pil_seconds = time.perf_counter() - started
        started = time.perf_counter()
        on_device = np.concatenate(
            [
                scorer.encode_preprocessed(device.pixels(paths[i : i + 64]))
                for i in range(0, len(paths), 64)
            ]
        )
        device_seconds = time.perf_counter() - started
        decoded_equal = np.mean(
            [
                np.array_equal(d.permute(1, 2, 0).cpu().numpy(), np.asarray(_open(p)))
                for p, d in zip(paths, decode_jpegs(paths, args.device), strict=True)
            ]
        )
    texts = scorer.encode_texts(CAPTIONS)
    cosine = _rows(on_device, by_pil)
    verdicts = (_unit(by_pil) @ _unit(texts).T).argmax(1) == (
        _unit(on_device) @ _unit(texts).T
    ).argmax(1)
    print(f"images: {len(paths)} of {len(found)} take the device path ({args.device})")
    print(f"decoded pixels equal to PIL's: {decoded_equal:.2%} of images")
    print(f"embedding cosine: min {cosine.min():.6f}  median {np.median(cosine):.6f}")
    print(f"equal verdicts (best of {len(CAPTIONS)} captions): {verdicts.mean():.2%}")
    print(
        f"seconds (decode, preprocess, encode): PIL {pil_seconds:.2f}  device {device_seconds:.2f}"
    )


def _open(path: str) -> Image.Image:
    with Image.open(path) as image:
        return image.convert("RGB")


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (_unit(a) * _unit(b)).sum(1)


if __name__ == "__main__":
    main()
