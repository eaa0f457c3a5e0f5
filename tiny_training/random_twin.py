"""``tiny``'s random twin: the same architecture with untrained weights from a fixed seed.

A capability a test measures on ``tiny`` but also on its random twin is not learned (or the
test does not measure what it says). Write the weights and run them like any checkpoint::

    python -m tiny_training.random_twin random.safetensors --seed 0
    pytest checklists --vl-model=random=open_clip:pytest_vlcheck/tiny/tiny.json@random.safetensors
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pytest_vlcheck.tiny import TINY_CONFIG
from tiny_training.train import build_model, save_weights


def write_random_twin(out: Path, seed: int) -> None:
    """Initialise ``tiny``'s architecture under ``torch.manual_seed(seed)`` and save it."""
    import torch

    torch.manual_seed(seed)
    model, _, _ = build_model(TINY_CONFIG)
    save_weights(model, out, {"random_twin_seed": str(seed)})


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: OUT [--seed N]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the .safetensors weights")
    parser.add_argument("--seed", type=int, default=0, help="torch seed of the init (default 0)")
    args = parser.parse_args(argv)
    write_random_twin(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
