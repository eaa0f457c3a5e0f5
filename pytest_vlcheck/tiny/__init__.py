"""The embedded ``tiny`` model: a small CLIP trained in this repo on synthetic scenes; and
``tiny-vlm``, its generative sibling (a small LLaVA, folder ``vlm/``).

It is a demo and a test fixture, not a contender: it knows shapes and colours of the bundled
scene vocabulary and little else. ``TINY_SPEC`` is an ordinary ``open_clip:CONFIG@WEIGHTS``
spec, so ``--vl-model=tiny`` loads through exactly the path a user's own checkpoint takes.
How the weights were made: ``python -m tiny_training.train`` (see ``TRAINING.md``);
``tiny-vlm``'s: ``python -m tiny_training.vlm.train`` (see ``vlm/TRAINING.md``).
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

TINY_VLM_DIR: Path = _HERE / "vlm"
"""``tiny-vlm``'s ``save_pretrained`` folder: a transformers LLaVA (fp16 storage) and its
processor (word-level tokenizer, CLIP image processor, LLaVA-1.5 chat template)."""

TINY_VLM_SPEC = f"vqa:{TINY_VLM_DIR}"
"""The model spec the ``tiny-vlm`` alias stands for: VQAScore for the CLIP kinds, the
generative kinds natively."""


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


def live_vlm(*, trained: bool = True) -> tuple[Any, Any]:
    """``tiny-vlm`` as a training loop holds it: a transformers ``LlavaForConditionalGeneration``
    in fp32 and train mode (the shipped weights, or unless ``trained`` the same architecture
    from transformers' init under ``torch.manual_seed(0)``: its random twin, the weights
    ``python -m tiny_training.vlm.train --tower-steps 0 --steps 0`` stores in fp16) and its
    ``AutoProcessor``: what ``pytest_vlcheck.evaluate(model, ..., preprocess=processor)``
    takes. Imports torch and transformers; offline."""
    import torch
    import transformers

    folder = str(TINY_VLM_DIR)
    processor = transformers.AutoProcessor.from_pretrained(folder)
    if trained:
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            folder, dtype=torch.float32
        )
    else:
        config = transformers.AutoConfig.from_pretrained(folder)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = transformers.AutoModelForImageTextToText.from_config(
                config, dtype=torch.float32
            )
    model.train()
    return model, processor


__all__ = [
    "TINY_CONFIG",
    "TINY_SPEC",
    "TINY_VLM_DIR",
    "TINY_VLM_SPEC",
    "TINY_WEIGHTS",
    "live_model",
    "live_vlm",
]
