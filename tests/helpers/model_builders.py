"""Tiny, seeded, offline models for tests: open_clip, transformers CLIP, SigLIP and BLIP ITM.

Each builder writes real files a backend loads through its normal path (a model-config JSON
plus safetensors for open_clip; a ``save_pretrained`` directory with tokenizer and image
processor for transformers). Weights come from the library's own random init under
``torch.manual_seed(seed)``, so the same seed always gives byte-identical weights. Each
builder runs in well under a second once torch/transformers are imported.

The transformers tokenizers are built offline from a byte-level character vocabulary (no
merges), which real tokenizer classes accept; text goes in character by character.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TINY_IMAGE = 32
TINY_PATCH = 8
TINY_WIDTH = 32
TINY_EMBED = 16

OPEN_CLIP_CONFIG: dict[str, Any] = {
    "embed_dim": TINY_EMBED,
    "vision_cfg": {
        "image_size": TINY_IMAGE,
        "layers": 2,
        "width": TINY_WIDTH,
        "head_width": 16,
        "patch_size": TINY_PATCH,
        # Active only in train mode: proves the backend switches to eval.
        "patch_dropout": 0.5,
    },
    "text_cfg": {
        # open_clip's default BPE tokenizer (SimpleTokenizer) has 49408 ids.
        "context_length": 77,
        "vocab_size": 49408,
        "width": TINY_WIDTH,
        "heads": 2,
        "layers": 2,
    },
}

# Strong dropout on purpose: a model left in train mode gives different outputs per call.
_TOWER = {
    "hidden_size": TINY_WIDTH,
    "intermediate_size": 2 * TINY_WIDTH,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "attention_dropout": 0.5,
}


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide save-time progress bars and config-default chatter; restore the settings after."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def build_open_clip(dirpath: Path, seed: int = 0, *, siglip: bool = False) -> tuple[Path, Path]:
    """Write ``tiny-clip.json`` and ``tiny-clip.safetensors``; return (config, weights).

    ``siglip=True`` adds a SigLIP-style ``logit_bias`` (``init_logit_bias``), so the backend
    exposes ``match_probability``; the name still avoids "siglip" so open_clip keeps its
    offline BPE tokenizer.
    """
    import open_clip
    import torch
    from safetensors.torch import save_file

    dirpath = Path(dirpath)
    dirpath.mkdir(parents=True, exist_ok=True)
    config = json.loads(json.dumps(OPEN_CLIP_CONFIG))
    if siglip:
        config["init_logit_bias"] = -2.0
        config["init_logit_scale"] = 2.3
    torch.manual_seed(seed)
    model = open_clip.CLIP(**config)
    if siglip:
        with torch.no_grad():  # a non-default value, so the test sees the real parameters
            model.logit_bias.fill_(-1.5 - 0.25 * seed)
    config_path = dirpath / "tiny-clip.json"
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    weights_path = dirpath / "tiny-clip.safetensors"
    state = {key: value.detach().contiguous() for key, value in model.state_dict().items()}
    save_file(state, str(weights_path))
    return config_path, weights_path


def byte_vocabulary(specials: list[str], *, word_suffix: str = "") -> dict[str, int]:
    """Special tokens, then the 256 byte-level characters (and their end-of-word forms)."""
    from tokenizers import pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab: dict[str, int] = {}
    for token in [*specials, *alphabet]:
        vocab.setdefault(token, len(vocab))
    if word_suffix:
        for char in alphabet:
            vocab.setdefault(char + word_suffix, len(vocab))
    return vocab


def build_hf_clip(dirpath: Path, seed: int = 0) -> Path:
    """A tiny transformers CLIPModel with CLIPTokenizer and CLIPImageProcessor, saved in dirpath."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTokenizer,
    )

    dirpath = Path(dirpath)
    vocab = byte_vocabulary(["<|startoftext|>", "<|endoftext|>"], word_suffix="</w>")
    # CLIPTokenizer(vocab_file=...) silently ignores the file; vocab/merges must be objects.
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)
    text_config = {
        **_TOWER,
        "vocab_size": len(vocab),
        "max_position_embeddings": 77,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision_config = {**_TOWER, "image_size": TINY_IMAGE, "patch_size": TINY_PATCH}
    config = CLIPConfig(
        text_config=text_config, vision_config=vision_config, projection_dim=TINY_EMBED
    )
    torch.manual_seed(seed)
    model = CLIPModel(config)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": TINY_IMAGE}, crop_size={"height": TINY_IMAGE, "width": TINY_IMAGE}
    )
    with _quiet_transformers():
        processor = CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer)
        processor.save_pretrained(dirpath)
        model.save_pretrained(dirpath)
    return dirpath


def build_hf_siglip(dirpath: Path, seed: int = 0) -> Path:
    """A tiny transformers SiglipModel with an offline tokenizer and SiglipImageProcessor.

    Real SigLIP checkpoints use a sentencepiece tokenizer (needs the ``sentencepiece``
    package and a trained model file). SiglipModel only needs ids in range, so this builds a
    ``tokenizers`` character-level tokenizer shaped like SigLIP's: an ``</s>`` appended to
    every text and used as padding. AutoTokenizer/AutoProcessor load it back as
    ``TokenizersBackend``.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import (
        PreTrainedTokenizerFast,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    dirpath = Path(dirpath)
    vocab = byte_vocabulary(["<pad>", "</s>", "<unk>"])
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            pre_tokenizers.Split("", "isolated"),
        ]
    )
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="</s>",
        pad_token="</s>",
        unk_token="<unk>",
        model_max_length=64,
    )
    text_config = {
        **_TOWER,
        "vocab_size": len(vocab),
        "max_position_embeddings": 64,
        "projection_size": TINY_WIDTH,  # = the vision width, as in real SigLIP
        "bos_token_id": None,
        "eos_token_id": vocab["</s>"],
        "pad_token_id": vocab["</s>"],
    }
    vision_config = {**_TOWER, "image_size": TINY_IMAGE, "patch_size": TINY_PATCH}
    config = SiglipConfig(text_config=text_config, vision_config=vision_config)
    torch.manual_seed(seed)
    model = SiglipModel(config)
    with torch.no_grad():  # SiglipModel's own init leaves these at 0; give them real values
        model.logit_scale.fill_(2.0 + 0.1 * seed)
        model.logit_bias.fill_(-3.0)
    image_processor = SiglipImageProcessor(size={"height": TINY_IMAGE, "width": TINY_IMAGE})
    with _quiet_transformers():
        SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(
            dirpath
        )
        model.save_pretrained(dirpath)
    return dirpath


def build_hf_blip_itm(dirpath: Path, seed: int = 0) -> Path:
    """A tiny BlipForImageTextRetrieval with a character WordPiece BertTokenizer."""
    import string

    import torch
    from transformers import (
        BertTokenizer,
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        BlipProcessor,
    )

    dirpath = Path(dirpath)
    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab: dict[str, int] = {}
    for token in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]:
        vocab.setdefault(token, len(vocab))
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=64)
    text_config = {
        **_TOWER,
        "vocab_size": len(vocab),
        "max_position_embeddings": 64,
        "encoder_hidden_size": TINY_WIDTH,
        "hidden_dropout_prob": 0.5,
        "pad_token_id": vocab["[PAD]"],
        "bos_token_id": vocab["[CLS]"],
        "sep_token_id": vocab["[SEP]"],
    }
    vision_config = {**_TOWER, "image_size": TINY_IMAGE, "patch_size": TINY_PATCH}
    config = BlipConfig(
        text_config=text_config,
        vision_config=vision_config,
        projection_dim=TINY_EMBED,
        image_text_hidden_size=TINY_EMBED,
    )
    config.architectures = ["BlipForImageTextRetrieval"]
    torch.manual_seed(seed)
    model = BlipForImageTextRetrieval(config)
    image_processor = BlipImageProcessor(size={"height": TINY_IMAGE, "width": TINY_IMAGE})
    with _quiet_transformers():
        processor = BlipProcessor(image_processor=image_processor, tokenizer=tokenizer)
        processor.save_pretrained(dirpath)
        model.save_pretrained(dirpath)
    return dirpath


COLOUR_SQUARES = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.0
    examples:
      - {image: red.png, caption: a red square, negatives: [a green square, a blue square]}
      - {image: green.png, caption: a green square, negatives: [a red square, a blue square]}
      - {image: blue.png, caption: a blue circle, negatives: [a red circle, a green circle]}
"""
"""A one-test checklist over three coloured squares, for models of any kind."""


def write_colour_squares(directory: Path) -> Path:
    """The three squares and ``COLOUR_SQUARES`` as ``checks.yaml`` in ``directory``."""
    from PIL import Image

    for name, colour in (("red", (220, 20, 20)), ("green", (20, 200, 20)), ("blue", (20, 20, 220))):
        Image.new("RGB", (64, 64), colour).save(directory / f"{name}.png")
    (directory / "checks.yaml").write_text(COLOUR_SQUARES, encoding="utf-8")
    return directory / "checks.yaml"
