"""An eval transform kept as uint8 pixels until the batch is made, with the same numbers.

open_clip's eval transform is ``Resize -> CenterCrop -> convert to RGB -> ToTensor ->
Normalize``. Everything before ``ToTensor`` works on PIL images; the last two turn the uint8
pixels into fp32 (``x / 255``, then ``(x - mean) / std``), four times the bytes. Split there,
an image is kept as its uint8 pixels (150 KB at 224 px instead of 602 KB) and a batch is
finished in one go with the same float32 operations in the same order, on the model's
device: elementwise IEEE operations round the same in a batch as one image at a time, so
the model sees the same bits (``tests/test_compact_pixels.py``).

torch and torchvision are imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch
    from PIL.Image import Image

_TO_TENSOR_NAMES = ("ToTensor", "MaybeToTensor")
"""torchvision's ``ToTensor`` and open_clip's subclass (``to_tensor`` for a PIL image)."""


@dataclass(frozen=True)
class CompactTransform:
    """``head`` (the PIL steps of the transform), then ``/255`` and ``(x - mean) / std``."""

    head: Callable[[Image], Any]
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def pixels(self, image: Image) -> np.ndarray | None:
        """The head's RGB output as uint8 [H, W, 3], or None when it is something else (the
        caller then uses the whole transform)."""
        import numpy as np
        from PIL import Image as PILImage

        out = self.head(image)
        if not isinstance(out, PILImage.Image) or out.mode != "RGB":
            return None
        return np.ascontiguousarray(np.asarray(out, dtype=np.uint8))

    def finish(self, batch: Sequence[Any], device: Any, dtype: Any) -> torch.Tensor:
        """The model input [N, 3, H, W] of uint8 [H, W, 3] pixels of one size (``pixels``
        outputs, or tensors already on a device: ``gpu_decode``), made on ``device``:
        ``to_tensor``'s ``float / 255`` and ``normalize``'s ``sub`` and ``div``."""
        import torch

        stacked = torch.stack([_tensor(item, torch).to(device) for item in batch])
        images = stacked.permute(0, 3, 1, 2).contiguous().to(torch.float32).div(255)
        mean = torch.as_tensor(self.mean, dtype=torch.float32, device=images.device)
        std = torch.as_tensor(self.std, dtype=torch.float32, device=images.device)
        images = images.sub(mean.view(1, -1, 1, 1)).div(std.view(1, -1, 1, 1))
        return images.to(dtype=dtype)


def split_transform(preprocess: Any) -> CompactTransform | None:
    """The compact form of a torchvision ``Compose`` ending in ``ToTensor`` + ``Normalize``
    (open_clip's eval transforms), or None for any other callable."""
    try:
        from torchvision.transforms import Compose, Normalize
    except ImportError:
        return None
    if type(preprocess) is not Compose or len(preprocess.transforms) < 2:
        return None
    *head, to_tensor, normalize = preprocess.transforms
    if type(to_tensor).__name__ not in _TO_TENSOR_NAMES or type(normalize) is not Normalize:
        return None
    mean, std = tuple(normalize.mean), tuple(normalize.std)
    if len(mean) != 3 or len(std) != 3 or 0 in std:
        return None
    return CompactTransform(Compose(head), tuple(map(float, mean)), tuple(map(float, std)))


def _tensor(item: Any, torch: Any) -> torch.Tensor:
    """A uint8 [H, W, 3] tensor of ``item``: a tensor as it is, an array copied (a PIL
    image's array is read-only, which torch does not share)."""
    import numpy as np

    return item if isinstance(item, torch.Tensor) else torch.from_numpy(np.array(item))
