"""The preprocessed images a live model's runner keeps across a training loop's calls.

A training loop calls ``evaluate(model, ...)`` every N steps; the images do not change
between calls, only the weights do, so decoding, rendering and preprocessing them again is
waste. The store keeps what the scorer's ``preprocess_image`` gives (for an open_clip eval
transform: uint8 pixels after its resize and crop, 150 KB at 224 px, normalised per batch
bit for bit as open_clip does; for a transformers processor: its ``pixel_values`` tensors as
it makes them; for another ``preprocess`` callable: its output as it is) up to a byte budget
(``--vl-image-memory`` / ``image_memory=``).

Over the budget a fixed part is kept, the first images offered in plan order, and the rest
is prepared again at every call: an LRU over a scan larger than itself would keep nothing.

Lifetime: its runner's (``run.live_runners``: as long as the model object lives).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pytest_vlcheck.bounds import DEFAULT_IMAGE_MEMORY
from pytest_vlcheck.images.refs import ImageKey

__all__ = ["DEFAULT_IMAGE_MEMORY", "ImageStore", "nbytes"]


@dataclass
class ImageStore:
    """Preprocessed images by image key within ``budget`` bytes (0: nothing is kept)."""

    budget: int = 0
    held: int = 0
    identity: str | None = None
    """What made the items (a live scorer's architecture, preprocessing and precision)."""
    _items: dict[ImageKey, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self._items)

    def bind(self, identity: str | None) -> None:
        """The items of the next call come from ``identity``: what another (or an unknown)
        preprocessing made is forgotten."""
        if identity is None or identity != self.identity:
            self.forget()
        self.identity = identity

    def recall(self, key: ImageKey) -> Any:
        """The kept item of ``key``, or None (thread-safe: the loader pool asks)."""
        with self._lock:
            return self._items.get(key)

    def offer(self, key: ImageKey, item: Any) -> bool:
        """Keep ``item`` when it fits beside what is kept; nothing kept is ever pushed out.
        Only arrays and tensors are kept (their size is known)."""
        size = nbytes(item)
        with self._lock:
            if size is None or key in self._items or self.held + size > self.budget:
                return False
            self._items[key] = item
            self.held += size
            return True

    def forget(self, keys: set[ImageKey] | None = None) -> None:
        """Drop ``keys`` (a file changed on disk), or everything (None: the preprocessing
        changed)."""
        with self._lock:
            for key in list(self._items) if keys is None else keys:
                item = self._items.pop(key, None)
                if item is not None:
                    self.held -= nbytes(item) or 0


def nbytes(item: Any) -> int | None:
    """Bytes of a numpy array or a torch tensor, or of a dict of them (a processor's
    features); None for anything else."""
    if isinstance(item, dict):
        sizes = [nbytes(value) for value in item.values()]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
    size = getattr(item, "nbytes", None)
    if size is None and hasattr(item, "element_size"):
        size = item.numel() * item.element_size()
    return size if isinstance(size, int) else None
