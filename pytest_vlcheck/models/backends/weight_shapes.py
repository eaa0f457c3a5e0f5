"""Does an open_clip weights file fit its model-config JSON? Checked from the safetensors
header, without torch: a config of another architecture than the weights is one usage error in
a fraction of a second, not an errored item per test after torch and open_clip were imported
and the model was built (then refused by ``load_state_dict``).

Only what the config states and the header holds is compared: the tensors whose shape follows
from the config's sizes (token and position embeddings, projections, the patch embedding, the
ResNet attention pool) and the number of transformer blocks. A tower the config builds from
another library (``timm_model_name``, ``hf_model_name``) is not checked; neither is a key the
weights lack (open_clip reports those itself).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["open_clip_shape_problem", "safetensors_shapes"]

_HEADER_LIMIT = 100 * 2**20
"""safetensors' own bound on a header (100 MB): anything longer is not a safetensors file."""

Expected = tuple[str, tuple[int, ...], str]
"""(tensor name, the shape the config makes, the config keys it follows from)."""


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]] | None:
    """Each tensor's shape from a safetensors file's JSON header; None when the file is not
    one (torch and safetensors then say what is wrong when the model loads)."""
    try:
        with path.open("rb") as file:
            (size,) = struct.unpack("<Q", file.read(8))
            if size > _HEADER_LIMIT:
                return None
            header = json.loads(file.read(size))
    except (OSError, struct.error, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    return {
        name.removeprefix("module."): tuple(entry["shape"])
        for name, entry in header.items()
        if isinstance(entry, dict) and isinstance(entry.get("shape"), list)
    }


def open_clip_shape_problem(config_path: Path, weights_path: Path) -> str | None:
    """What in ``weights_path`` does not fit ``config_path`` (None: nothing found), as
    "what differs; what is expected". A config that does not read as JSON is left to the
    backend, which names its line."""
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    config = config.get("model_cfg", config) if isinstance(config, dict) else None
    if not isinstance(config, dict):
        return None
    shapes = safetensors_shapes(weights_path)
    if shapes is None:
        return None
    shapes |= _block_counts(shapes)
    wrong = [
        (name, shapes[name], want, keys)
        for name, want, keys in _expected(config, shapes)
        if name in shapes and shapes[name] != want
    ]
    if not wrong:
        return None
    name, have, want, keys = wrong[0]
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    return (
        f"the weights do not fit the model config: {name}: {_shape(have)} in "
        f"{weights_path.name}, {config_path.name} ({keys}) makes {_shape(want)}{more}; "
        "expected the model-config .json the weights were saved with"
    )


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]" if shape else "a number"


_BLOCKS = re.compile(r"((?:visual\.)?transformer\.resblocks)\.(\d+)\.")
_TOWERS = {"transformer.resblocks": "text", "visual.transformer.resblocks": "vision"}


def _block_counts(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Each transformer tower's block count, as a pseudo-tensor ``the text blocks`` of shape
    ``[count]``, compared with the config's ``layers`` like a shape."""
    found: dict[str, set[int]] = {}
    for name in shapes:
        if match := _BLOCKS.match(name):
            found.setdefault(match[1], set()).add(int(match[2]))
    return {f"the {_TOWERS[prefix]} blocks": (len(found[prefix]),) for prefix in found}


def _ints(cfg: Mapping[str, Any], *keys: str) -> tuple[int, ...] | None:
    """The config's values for ``keys`` when all are whole numbers, else None."""
    values = [cfg.get(key) for key in keys]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return tuple(v for v in values if isinstance(v, int))
    return None


def _expected(
    config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]
) -> Iterator[Expected]:
    """The shapes the config makes, for the towers open_clip builds itself."""
    embed = config.get("embed_dim")
    text = config.get("text_cfg")
    if isinstance(text, dict) and not text.get("hf_model_name"):
        yield from _text_tower(text, embed)
    vision = config.get("vision_cfg")
    if isinstance(vision, dict) and not vision.get("timm_model_name"):
        if isinstance(vision.get("layers"), list):
            yield from _resnet_tower(vision, embed)
        else:
            yield from _vision_transformer(vision, embed, shapes)


def _text_tower(text: Mapping[str, Any], embed: object) -> Iterator[Expected]:
    if sizes := _ints(text, "vocab_size", "width"):
        yield "token_embedding.weight", sizes, "text_cfg vocab_size, width"
    if sizes := _ints(text, "context_length", "width"):
        yield "positional_embedding", sizes, "text_cfg context_length, width"
    if (width := _ints(text, "width")) and isinstance(embed, int):
        yield "text_projection", (*width, embed), "text_cfg width, embed_dim"
    if layers := _ints(text, "layers"):
        yield "the text blocks", layers, "text_cfg layers"


def _vision_transformer(
    vision: Mapping[str, Any], embed: object, shapes: Mapping[str, tuple[int, ...]]
) -> Iterator[Expected]:
    if sizes := _ints(vision, "width", "patch_size"):
        width, patch = sizes
        yield "visual.conv1.weight", (width, 3, patch, patch), "vision_cfg width, patch_size"
        if isinstance(embed, int):
            yield "visual.proj", (width, embed), "vision_cfg width, embed_dim"
    if sizes := _ints(vision, "image_size", "patch_size", "width"):
        image, patch, width = sizes
        tokens = (image // patch) ** 2 + ("visual.class_embedding" in shapes)
        yield "visual.positional_embedding", (tokens, width), "vision_cfg image_size, patch_size"
    if layers := _ints(vision, "layers"):
        yield "the vision blocks", layers, "vision_cfg layers"


def _resnet_tower(vision: Mapping[str, Any], embed: object) -> Iterator[Expected]:
    """open_clip's ModifiedResNet: its attention pool works at 32 x the stem width."""
    if (sizes := _ints(vision, "width")) and isinstance(embed, int):
        yield "visual.attnpool.c_proj.weight", (embed, 32 * sizes[0]), "vision_cfg width, embed_dim"
    if sizes := _ints(vision, "image_size", "width"):
        image, width = sizes
        grid = (image // 32) ** 2 + 1
        yield "visual.attnpool.positional_embedding", (grid, 32 * width), "vision_cfg image_size"
