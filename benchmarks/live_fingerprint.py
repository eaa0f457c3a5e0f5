"""Cost of a live model's fingerprint (``models.live_fingerprint.weights_checksum``) against
sha256 over every weight byte, on an open_clip model with random weights (no download;
ViT-B-32 unless ``--arch`` names another open_clip architecture).

    python benchmarks/live_fingerprint.py [--device cpu|cuda] [--repeat 5] [--arch ViT-B-32]

Prints the fastest and the median seconds of each method (the fastest is the least disturbed
on a shared machine): the checksum alone, the whole ``fingerprint`` property of a live
scorer (checksum + model repr), and sha256 over every byte (read in place on the CPU; on a
GPU it includes the copy to the host that hashing needs).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def _sha256_all_bytes(model) -> str:
    import torch

    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _seconds(function: Callable[[], object], repeat: int, sync: Callable[[], None]) -> str:
    function()  # warm up: keys built, kernels loaded
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        function()
        sync()
        times.append(time.perf_counter() - start)
    return f"fastest {min(times):.3f} s, median {statistics.median(times):.3f} s"


def main() -> None:
    import open_clip
    import torch

    from pytest_vlcheck.models.live.fingerprint import weights_checksum
    from pytest_vlcheck.models.live.scorer import live_scorer
    from pytest_vlcheck.models.protocol import ModelOptions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--arch",
        default="ViT-B-32",
        help="an open_clip architecture name, or a model-config JSON file",
    )
    args = parser.parse_args()
    if args.arch.endswith(".json"):  # a config file: registered under its stem
        open_clip.add_model_config(args.arch)
        args.arch = Path(args.arch).stem
    model, _, preprocess = open_clip.create_model_and_transforms(args.arch, device=args.device)
    scorer = live_scorer(
        model,
        preprocess=preprocess,
        tokenizer=open_clip.get_tokenizer(args.arch),
        options=ModelOptions(device=args.device),
    )
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    n_bytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    print(
        f"open_clip {args.arch} on {args.device}: {n_bytes / 2**20:.0f} MiB of weights and buffers"
    )
    rows = {
        "weights checksum": lambda: weights_checksum(model),
        "live scorer's fingerprint": lambda: scorer.fingerprint,
        "sha256 of every byte": lambda: _sha256_all_bytes(model),
    }
    for label, function in rows.items():
        print(f"{label + ':':28}{_seconds(function, args.repeat, sync)}")


if __name__ == "__main__":
    main()
