"""Which images of a batch are decoded on the model's device (``--vl-decode gpu``), and
decoding them there; everything else keeps the CPU path, one image at a time."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.models.pixels.device_transform import (
    DeviceTransform,
    decode_jpegs,
    device_transform,
)
from pytest_vlcheck.models.pixels.device_transform import fallback_reason as file_fallback

if TYPE_CHECKING:
    import torch


class DeviceDecodeWarning(UserWarning):
    """``--vl-decode gpu`` asked for a model whose preprocessing the device path cannot do."""


@dataclass(frozen=True)
class OnDevice:
    """A placeholder from the loader threads: this file is decoded with its batch."""

    location: str


@dataclass(frozen=True)
class DeviceDecode:
    """The device path for one scorer: its transform and device."""

    transform: DeviceTransform
    device: Any

    @classmethod
    def for_scorer(cls, scorer: Any, name: str) -> DeviceDecode | None:
        """The device path of ``scorer`` (an open_clip model with its shortest-edge eval
        transform), or None, said once, for any other preprocessing."""
        preprocess = getattr(scorer, "preprocess", None)
        transform = None if preprocess is None else device_transform(preprocess)
        if transform is None or not hasattr(scorer, "compact"):
            warnings.warn(
                f"{name}: decode 'gpu' cannot express this model's preprocessing; "
                "its images are decoded on the CPU",
                DeviceDecodeWarning,
                stacklevel=2,
            )
            return None
        return cls(transform, getattr(scorer, "device", "cpu"))

    def fallback(self, ref: ImageRef) -> str | None:
        """Why ``ref`` takes the CPU path (None: a plain baseline RGB JPEG file)."""
        if ref.kind != "file":
            return f"a {ref.kind} image"
        if ref.crop is not None or ref.perturb is not None or ref.sha256 is not None:
            return "cropped, perturbed or pinned"
        return file_fallback(ref.location)

    def pixels(self, locations: Sequence[str]) -> list[torch.Tensor]:
        """The uint8 [H, W, 3] model pixels of the files, decoded together on the device
        (``CompactTransform.finish`` normalises them with the batch)."""
        decoded = decode_jpegs(locations, self.device)
        return [self.transform.pixels(image).permute(1, 2, 0) for image in decoded]
