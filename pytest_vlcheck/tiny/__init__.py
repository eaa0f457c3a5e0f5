"""The embedded ``tiny`` model: a small CLIP trained in this repo on synthetic scenes.

It is a demo and a test fixture, not a contender: it knows shapes and colours of the bundled
scene vocabulary and little else. ``TINY_SPEC`` is an ordinary ``open_clip:CONFIG@WEIGHTS``
spec, so ``--vl-model=tiny`` loads through exactly the path a user's own checkpoint takes.
How the weights were made: ``python -m tiny_training.train`` (see ``TRAINING.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent

TINY_CONFIG: Path = _HERE / "tiny.json"
"""The open_clip model config (architecture only)."""

TINY_WEIGHTS: Path = _HERE / "tiny.safetensors"
"""The trained weights, fp16 in storage; open_clip copies them into fp32 parameters."""

TINY_SPEC = f"open_clip:{TINY_CONFIG}@{TINY_WEIGHTS}"
"""The model spec the ``tiny`` alias stands for."""

CONTEXT_LENGTH = 32
"""The text context tiny was trained with (its config's ``text_cfg.context_length``)."""


def live_model(*, trained: bool = True) -> tuple[Any, Any, Any]:
    """``tiny`` as the objects a training loop holds: an open_clip ``CLIP`` (in train mode,
    with the shipped weights unless ``trained`` is False: open_clip's random init), its eval
    preprocessing and its tokenizer: what ``pytest_vlcheck.evaluate(model, ...,
    preprocess=..., tokenizer=...)`` takes. Imports open_clip."""
    import open_clip
    from safetensors.torch import load_file

    config = json.loads(TINY_CONFIG.read_text(encoding="utf-8"))
    model = open_clip.CLIP(**config)
    if trained:
        model.load_state_dict(load_file(str(TINY_WEIGHTS)))
    model.train()
    preprocess = open_clip.image_transform(config["vision_cfg"]["image_size"], is_train=False)
    return model, preprocess, open_clip.tokenizer.SimpleTokenizer(context_length=CONTEXT_LENGTH)


__all__ = ["TINY_CONFIG", "TINY_SPEC", "TINY_WEIGHTS", "live_model"]
