"""Buffers a checkpoint does not hold, set again after loading.

Non-persistent buffers are not saved, so ``from_pretrained`` recreates them empty and relies on
each model's ``_init_weights`` to fill them. transformers 5.24's PaliGemma has no
``_init_weights`` of its own: its SigLIP tower's ``position_ids`` (``arange(n)``) and its Gemma
embedding's ``embed_scale`` (sqrt(hidden size)) keep whatever the memory held. That indexes
the position table out of range (an error) or, worse, gives wrong scores that differ from
one load to the next. Both are set to what their module's ``__init__`` makes, for any model.
"""

from __future__ import annotations

from typing import Any


def restore_unsaved_buffers(model: Any) -> int:
    """Set every non-persistent ``position_ids`` buffer of shape [1, n] to arange(n) and every
    ``embed_scale`` buffer of a module keeping its ``scalar_embed_scale`` to that value; how
    many were wrong (all are right after)."""
    import torch

    wrong = 0
    for module in model.modules():
        unsaved: set[str] = getattr(module, "_non_persistent_buffers_set", set())
        ids = module._buffers.get("position_ids") if "position_ids" in unsaved else None
        if ids is not None and ids.dim() == 2 and ids.shape[0] == 1 and not ids.is_floating_point():
            expected = torch.arange(ids.shape[1], dtype=ids.dtype, device=ids.device)[None, :]
            wrong += _set(ids, expected)
        scale = module._buffers.get("embed_scale") if "embed_scale" in unsaved else None
        value = getattr(module, "scalar_embed_scale", None)
        if scale is not None and isinstance(value, (int, float)):
            wrong += _set(scale, torch.full_like(scale, float(value)))
    return wrong


def _set(buffer: Any, expected: Any) -> int:
    """Copy ``expected`` into ``buffer``; 1 when it differed, else 0."""
    import torch

    if torch.equal(buffer, expected):
        return 0
    with torch.no_grad():
        buffer.copy_(expected)
    return 1
