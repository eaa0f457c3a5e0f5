"""A live model run at a lower precision than it holds: one cast copy of its weights per call.

``precision="bf16"`` on an fp32 model under ``torch.autocast`` casts every weight again at
every matmul of every batch, which measured three times *slower* than fp32 on an H100
(issue 36), while the same model cast to bf16 once ran its towers 2.8x faster. So the
encoders get a ``CastCopy`` instead of the caller's model: on the first forward pass of an
``evaluate`` call (none at all when nothing is encoded: an unchanged model's call) it makes
one deep copy of the model, in eval mode, cast to the precision, and uses it for the call's
batches. The caller's model is never moved, cast or switched to eval (``live_guard`` still
restores the random number generators around each pass). Lifetime: one call (the live
scorer is made anew at each ``evaluate``, and the copy with it, from the weights as they
are then).
"""

from __future__ import annotations

import copy
from typing import Any


class CastCopy:
    """Stands for ``model`` in an encoder: attribute access goes to a copy cast to
    ``dtype``, made on first use. ``copies`` counts the copies made (at most one)."""

    def __init__(self, model: Any, dtype: Any) -> None:
        self._model = model
        self._dtype = dtype
        self._copy: Any = None
        self.copies = 0

    def current(self) -> Any:
        """The cast copy, made now if not yet."""
        if self._copy is None:
            import torch

            with torch.no_grad():
                made = copy.deepcopy(self._model)
                made.requires_grad_(False)
                self._copy = made.to(dtype=self._dtype).eval()
            self.copies += 1
        return self._copy

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)
