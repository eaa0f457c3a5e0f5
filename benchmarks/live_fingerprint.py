"""Cost of a live model's fingerprint (``models.live_fingerprint.weights_checksum``) against
sha256 over every weight byte, on open_clip ViT-B-32 with random weights (no download).

    python benchmarks/live_fingerprint.py [--device cpu|cuda] [--repeat 5]

Prints the median seconds of each method; the sha256 baseline includes copying the bytes to
the host, as hashing them needs.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable


def _sha256_all_bytes(model) -> str:
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().contiguous().cpu().reshape(-1).view(-1).numpy().tobytes())
    return digest.hexdigest()


def _median_seconds(function: Callable[[], object], repeat: int, sync: Callable[[], None]) -> float:
    function()  # warm up: keys built, kernels loaded
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        function()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    import open_clip
    import torch

    from pytest_vlcheck.models.live_fingerprint import weights_checksum

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model = open_clip.create_model("ViT-B-32").to(args.device)
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    n_bytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    print(f"open_clip ViT-B-32 on {args.device}: {n_bytes / 2**20:.0f} MiB of weights and buffers")
    keyed = _median_seconds(lambda: weights_checksum(model), args.repeat, sync)
    full = _median_seconds(lambda: _sha256_all_bytes(model), args.repeat, sync)
    print(f"keyed checksum (live fingerprint): {keyed:.3f} s")
    print(f"sha256 of every byte:              {full:.3f} s")
    print(f"ratio: {full / keyed:.1f}x")


if __name__ == "__main__":
    main()
