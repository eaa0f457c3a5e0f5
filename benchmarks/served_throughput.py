"""Pairs per second of a served generative VLM (``vqa:http://...``) at ``--vl-concurrency``
1, 4 and 16, beside the in-process ``vqa:`` on the same weights (medians of ``--repeats``).

    python benchmarks/served_throughput.py                     # the tests' server, tiny LLaVA
    python benchmarks/served_throughput.py --url http://HOST:8000/v1#MODEL@REV \\
        --weights DIR                                          # a vLLM server, and its weights

Without ``--url`` the model is a random LLaVA built offline by the tests' builder, served by
the tests' own server (``tests/helpers/served_server.py``: one forward at a time on one thread, so
concurrency overlaps only the HTTP, PNG and JSON work with the forwards). Every run must give
the in-process scores (max difference printed; both answer after the chat template's
separator, LLaVA's ``ASSISTANT: Yes``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.backends.served.options import ServedOptions
from pytest_vlcheck.models.protocol import ModelOptions

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
from vqa_builders import build_llava  # noqa: E402  (the tests' builder, not a copy)
from vqa_throughput import random_pairs  # noqa: E402  (the same pairs)


def _median_rate(
    score: Callable[[list, list], np.ndarray], batch: list, texts: list, repeats: int
) -> tuple[float, np.ndarray]:
    """Pairs per second (median of ``repeats`` runs) and the scores."""
    times, scores = [], np.zeros(0)
    for _ in range(repeats):
        start = time.perf_counter()
        scores = score(batch, texts)
        times.append(time.perf_counter() - start)
    return len(texts) / float(np.median(times)), scores


def _start_server(weights: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "helpers" / "served_server.py"),
            f"--model=llava={weights}",
        ],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    return server, f"http://127.0.0.1:{port}/v1#llava@bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting (median)")
    parser.add_argument("--url", help="a served model's body: URL[,URL]#MODEL[@REVISION]")
    parser.add_argument("--weights", type=Path, help="the served model's folder (with --url)")
    args = parser.parse_args()

    pairs = random_pairs(args.pairs, args.images)
    batch, texts = [image for image, _ in pairs], [text for _, text in pairs]
    with tempfile.TemporaryDirectory() as folder:
        weights = args.weights or build_llava(Path(folder) / "llava")
        server, url = (None, args.url) if args.url else _start_server(weights)
        try:
            local = vqa_backend.load(str(weights), ModelOptions(device="cpu"))
            rate, reference = _median_rate(local.score_pairs, batch, texts, args.repeats)
            print(f"{'in-process vqa:':27}{rate:8.1f} pairs/s")
            for concurrency in (1, 4, 16):
                options = ModelOptions(served=ServedOptions(concurrency=concurrency))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    remote = vqa_backend.load(url, options)
                rate, scores = _median_rate(remote.score_pairs, batch, texts, args.repeats)
                gap = float(np.max(np.abs(scores - reference)))
                label = f"served, concurrency {concurrency:>2}:"
                print(f"{label:27}{rate:8.1f} pairs/s  (max diff {gap:.1e})")
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
