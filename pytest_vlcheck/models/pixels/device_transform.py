"""JPEG decoding, resizing and cropping on the model's device (``--vl-decode gpu``).

open_clip's eval transform (``Resize`` bicubic to the shorter edge, ``CenterCrop``, then
``ToTensor`` + ``Normalize``) is rebuilt from the model's own transform: the files are decoded
in one ``torchvision.io.decode_jpeg`` call on the device, each image resized (bicubic,
antialias, rounded to uint8 as PIL does) and cropped there, and the batch normalised by
``compact_pixels`` with the same operations as the CPU path's. Decoding alone equals PIL
bit for bit; resizing differs from PIL's by one level on a fraction of the values, so the
embeddings agree closely but not exactly (``benchmarks/gpu_decode_agreement.py``). Files
this path cannot take as PIL would (``fallback_reason``) and transforms it cannot express
(``device_transform`` is None) stay on the CPU path.

torch and torchvision are imported inside the functions only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.images.loading import over_pixel_limit
from pytest_vlcheck.models.pixels.compact import split_transform

if TYPE_CHECKING:
    import torch

_EXIF_ORIENTATION = 0x0112


def on_accelerator(device: str) -> bool:
    """Whether a model on ``device`` (an option value: ``auto``, ``cpu``, ``cuda:1``) runs on
    a CUDA device, the one kind ``decode_jpeg`` decodes on; ``auto`` asks torch."""
    if device == "auto":
        import torch

        return bool(torch.cuda.is_available())
    return device.startswith("cuda")


def fallback_reason(path: str) -> str | None:
    """Why the file at ``path`` takes the CPU path (None: the device can decode it as PIL
    does): not a JPEG, not 3-channel RGB (grayscale, CMYK), progressive, or turned by EXIF.
    Reads the header only."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            if image.format != "JPEG":
                return f"{image.format or 'unknown'} format"
            if image.mode != "RGB":
                return f"{image.mode} mode"
            if image.info.get("progressive") or image.info.get("progression"):
                return "progressive JPEG"
            if image.getexif().get(_EXIF_ORIENTATION, 1) != 1:
                return "EXIF orientation"
            if over_pixel_limit(image.width * image.height):
                return "over the pixel limit"
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        return f"unreadable header ({type(exc).__name__})"
    return None


def decode_jpegs(paths: Sequence[str], device: Any) -> list[torch.Tensor]:
    """The uint8 [3, H, W] pixels of the baseline RGB JPEGs at ``paths``, decoded together
    on ``device``."""
    import torch

    if not paths:
        return []
    with warnings.catch_warnings():  # torchvision >= 0.29 points to torchcodec on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from torchvision.io import ImageReadMode, decode_jpeg, read_file

        data = [read_file(path) for path in paths]
        decoded = decode_jpeg(data, mode=ImageReadMode.RGB, device=torch.device(device))
    return list(decoded)


@dataclass(frozen=True)
class DeviceTransform:
    """open_clip's eval transform up to ``ToTensor`` as tensor operations: resize the
    shorter edge to ``resize`` (bicubic, antialias), crop the centre ``crop`` (the batch is
    normalised by ``CompactTransform.finish``)."""

    resize: int
    crop: tuple[int, int]

    def pixels(self, image: torch.Tensor) -> torch.Tensor:
        """The uint8 [3, crop] pixels of one decoded image, made on its device."""
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as tf

        resized = tf.resize(
            image, [self.resize], interpolation=InterpolationMode.BICUBIC, antialias=True
        )
        cropped: torch.Tensor = tf.center_crop(resized, list(self.crop))  # torchvision: untyped
        return cropped


def device_transform(preprocess: Any) -> DeviceTransform | None:
    """The device form of ``preprocess`` when it is open_clip's shortest-edge eval transform
    (``Resize(int, bicubic)``, ``CenterCrop``, the RGB conversion, ``ToTensor``,
    ``Normalize``); None for anything else (other resize modes, transformers processors,
    user callables), which keep the CPU path."""
    from torchvision.transforms import CenterCrop, InterpolationMode, Resize

    compact = split_transform(preprocess)
    if compact is None:
        return None
    steps = list(getattr(compact.head, "transforms", ()))
    if len(steps) != 3 or type(steps[0]) is not Resize or type(steps[1]) is not CenterCrop:
        return None
    resize, crop = steps[0], steps[1]
    convert = steps[2]
    if getattr(convert, "mode", None) != "RGB" and getattr(convert, "__name__", "") != (
        "_convert_to_rgb"
    ):
        return None
    size = resize.size if isinstance(resize.size, int) else list(resize.size)
    if isinstance(size, list) and len(size) == 1:
        size = size[0]
    if not isinstance(size, int) or resize.max_size is not None:
        return None
    if resize.interpolation != InterpolationMode.BICUBIC or resize.antialias is False:
        return None
    height, width = crop.size
    return DeviceTransform(size, (int(height), int(width)))
