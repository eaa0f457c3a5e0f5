"""The embedded ``tiny`` model: a small CLIP trained in this repo on synthetic scenes.

It is a demo and a test fixture, not a contender: it knows shapes and colours of the bundled
scene vocabulary and little else. ``TINY_SPEC`` is an ordinary ``open_clip:CONFIG@WEIGHTS``
spec, so ``--vl-model=tiny`` loads through exactly the path a user's own checkpoint takes.
How the weights were made: ``python -m tiny_training.train`` (see ``TRAINING.md``).
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

TINY_CONFIG: Path = _HERE / "tiny.json"
"""The open_clip model config (architecture only)."""

TINY_WEIGHTS: Path = _HERE / "tiny.safetensors"
"""The trained weights, fp16 in storage; open_clip copies them into fp32 parameters."""

TINY_SPEC = f"open_clip:{TINY_CONFIG}@{TINY_WEIGHTS}"
"""The model spec the ``tiny`` alias stands for."""

__all__ = ["TINY_CONFIG", "TINY_SPEC", "TINY_WEIGHTS"]
