"""An eval transform kept as uint8 pixels until the batch is made, with the same numbers.

open_clip's eval transform is ``Resize -> CenterCrop -> convert to RGB -> ToTensor ->
Normalize``. Everything before ``ToTensor`` works on PIL images; the last two turn the uint8
pixels into fp32 (``x / 255``, then ``(x - mean) / std``), four times the bytes. Split there,
an image is kept as its uint8 pixels (150 KB at 224 px instead of 602 KB) and a batch is
finished in one go with the same float32 operations in the same order, on the model's
device: elementwise IEEE operations round the same in a batch as one image at a time, so
the model sees the same bits (``tests/models/test_compact_pixels.py``).

torch and torchvision are imported inside the functions only.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch
    from PIL.Image import Image
    from torch import Tensor

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
        return np.array(out, dtype=np.uint8)  # a copy of its own: shared by tensors later

    def describe(self) -> str:
        """What decides the pixels, the same in every process: each step of the head (its
        repr; a function by its qualified name; an object whose repr says nothing by its
        class and settings), then mean and std (the pixel cache's namespace)."""
        steps = getattr(self.head, "transforms", [self.head])
        return json.dumps([[_step(step) for step in steps], self.mean, self.std])

    def finish(
        self, batch: Sequence[Any], device: Any, dtype: Any, into: HostBatch | None = None
    ) -> torch.Tensor:
        """The model input [N, 3, H, W] of uint8 [H, W, 3] pixels of one size (``pixels``
        outputs, or tensors already on a device: ``gpu_decode``), made on ``device``:
        ``to_tensor``'s ``float / 255`` and ``normalize``'s ``sub`` and ``div`` (the three
        roundings of the whole transform, in its order), in place.

        On the CPU each image is finished alone while its 600 KB are in cache (one pass
        from memory instead of five over the batch, the same bits), into ``into``'s tensor
        when given; elsewhere the uint8 batch is moved once and finished as a whole."""
        import torch

        tensors = [_tensor(item, torch) for item in batch]
        target = torch.device(device)
        mean = torch.tensor(self.mean, dtype=torch.float32, device=target).view(-1, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=target).view(-1, 1, 1)
        on_host = all(t.device.type == "cpu" for t in tensors)
        if target.type == "cpu" and on_host:
            height, width, channels = tensors[0].shape
            shape = (len(tensors), channels, height, width)
            images = (into or HostBatch()).take(shape)
            for image, pixels in zip(images, tensors, strict=True):
                image.copy_(pixels.permute(2, 0, 1)).div_(255).sub_(mean).div_(std)
        else:  # stacked where the pixels are, then moved in one transfer
            stacked = torch.stack(tensors if on_host else [t.to(target) for t in tensors])
            images = stacked.to(target, non_blocking=True).permute(0, 3, 1, 2)
            images = images.to(torch.float32, memory_format=torch.contiguous_format)
            images.div_(255).sub_(mean).div_(std)
        return images.to(dtype=dtype)


@dataclass
class HostBatch:
    """The fp32 tensor CPU batches are finished into, reused from batch to batch by one
    scorer (which encodes one batch at a time and copies its outputs out): a fresh 38 MB
    tensor per batch of 64 at 224 px costs page faults and the kernel's zeroing, 1.0 s
    against 0.35 s over the bundled suite on this machine (``benchmarks/in_loop.py``)."""

    tensor: torch.Tensor | None = field(default=None, repr=False)

    def take(self, shape: tuple[int, int, int, int]) -> torch.Tensor:
        """A [N, C, H, W] fp32 tensor to overwrite (its first N rows of the kept one)."""
        import torch

        held = self.tensor
        if held is None or held.shape[1:] != shape[1:] or len(held) < shape[0]:
            held = self.tensor = torch.empty(shape, dtype=torch.float32)
        return held[: shape[0]]


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


def _step(step: Any) -> str:
    """One transform step in words: a function or class by its qualified name, an object by
    its class, its repr and its plain public settings (a repr need not show them all; not
    a module's train/eval flag, nor addresses: they differ per process)."""
    if inspect.isfunction(step) or inspect.isclass(step):
        return f"{step.__module__}.{step.__qualname__}"
    settings = {
        key: repr(value)
        for key, value in sorted(getattr(step, "__dict__", {}).items())
        if not key.startswith("_")
        and key != "training"
        and isinstance(value, (bool, int, float, str, tuple))
    }
    kind = f"{type(step).__module__}.{type(step).__qualname__}"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", f"{kind} {step!r} {settings}")


def _tensor(item: Any, torch: Any) -> Tensor:
    """A uint8 [H, W, 3] tensor of ``item``: a tensor as it is, a writeable array shared
    (``pixels`` outputs), another array copied (a PIL image's is read-only, which torch
    does not share). ``torch`` is the module, passed in (Any to mypy), so ``tensor`` is typed."""
    import numpy as np

    tensor: Tensor
    if isinstance(item, torch.Tensor):
        tensor = item
    elif item.flags.writeable and item.flags.c_contiguous:
        tensor = torch.from_numpy(item)
    else:
        tensor = torch.from_numpy(np.array(item))
    return tensor
