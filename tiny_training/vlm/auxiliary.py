"""A training-only auxiliary loss that gets ``tiny-vlm``'s vision path going on a CPU budget.

Trained on answer tokens alone, the small LLaVA sat at the answers' prior for hundreds of
steps (the answer loss only reaches the vision tower through attention it has not learned to
pay). This head reads the mean of the projected image tokens (what the decoder sees) and
predicts the scene's truth densely: which colours, shapes and colour+shape pairs are present
(binary cross-entropy) and how many of each shape (0-4, cross-entropy). It is not saved: the
shipped model is the stock LLaVA alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPES

PAIRS = [(c, s) for c in OBJECT_COLORS for s in SHAPES]
N_PRESENT = len(OBJECT_COLORS) + len(SHAPES) + len(PAIRS)
MAX_COUNT = 4


def scene_targets(scenes: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(presence [n, N_PRESENT] float32, shape counts [n, shapes] int64 clipped at 4)."""
    present = np.zeros((len(scenes), N_PRESENT), dtype=np.float32)
    counts = np.zeros((len(scenes), len(SHAPES)), dtype=np.int64)
    for i, scene in enumerate(scenes):
        for o in scene["objects"]:
            c, s = OBJECT_COLORS.index(o["color"]), SHAPES.index(o["shape"])
            present[i, c] = 1
            present[i, len(OBJECT_COLORS) + s] = 1
            present[i, len(OBJECT_COLORS) + len(SHAPES) + PAIRS.index((o["color"], o["shape"]))] = 1
            counts[i, s] = min(MAX_COUNT, counts[i, s] + 1)
    return present, counts


class AuxiliaryHead:
    """A linear map from the mean projected image token to the scene's truth."""

    def __init__(self, width: int) -> None:
        import torch

        self.linear = torch.nn.Linear(width, N_PRESENT + len(SHAPES) * (MAX_COUNT + 1))

    def parameters(self) -> Any:
        return self.linear.parameters()

    def loss(self, features: Any, present: Any, counts: Any) -> Any:
        """Mean BCE of presence + mean CE of counts for image features [n, tokens, width]."""
        import torch.nn.functional as F

        out = self.linear(features.mean(dim=1))
        presence = F.binary_cross_entropy_with_logits(out[:, :N_PRESENT], present)
        count_logits = out[:, N_PRESENT:].reshape(-1, MAX_COUNT + 1)
        return presence + F.cross_entropy(count_logits, counts.reshape(-1))
