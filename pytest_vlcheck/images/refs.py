"""What a checklist says about an image, resolved but not yet loaded."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_vlcheck.errors import ImageError
from pytest_vlcheck.images.perturb import ImagePerturbation

Crop = tuple[float, float, float, float]
"""A crop box: x, y, width, height from the top-left corner, in pixels or, when the ref's
``crop_relative`` is set, in fractions of the image's width and height."""

SourceKind = Literal["file", "url", "scene"]

ImageKey = tuple[SourceKind, str, "str | None", "Crop | None", bool, "ImagePerturbation | None"]
"""The identity of an image's pixels (``ImageRef.key``): every store, cache and batch of the
engine holds images by it."""


@dataclass(frozen=True)
class ImageRef:
    """One image of a checklist: where its pixels come from, and an optional crop.

    ``written`` is the reference exactly as the checklist writes it (the relative path, the
    URL, or a canonical JSON of the scene); it is what ``scores:`` files and reports name.
    ``location`` is where the pixels are: an absolute path for files, the URL for URLs, the
    canonical JSON for scenes. ``perturb`` (invariance and directional tests) is applied
    after decoding and cropping. Two refs with equal ``location``, ``sha256``, ``crop`` and
    ``perturb`` are the same image and are encoded once.
    """

    kind: SourceKind
    written: str
    location: str
    crop: Crop | None = None
    crop_relative: bool = False
    sha256: str | None = None
    perturb: ImagePerturbation | None = None

    @property
    def key(self) -> ImageKey:
        """Identity of the pixels: equal keys mean one encoding. A URL's pin is part of it:
        a pinned and an unpinned reference load (and fail) separately."""
        return (self.kind, self.location, self.sha256, self.crop, self.crop_relative, self.perturb)

    def describe(self) -> str:
        """Human-readable form for messages and reports."""
        text = self.written if self.kind != "scene" else "scene:" + self.written
        if self.crop is not None:
            name = "crop_relative" if self.crop_relative else "crop"
            text = f"{text} {name}={list(self.crop)}"
        return text if self.perturb is None else f"{text} perturb={self.perturb.canonical()}"


def canonical_scene(spec: Mapping[str, Any]) -> str:
    """A scene spec as compact JSON with sorted keys: one spelling per scene."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


class ImageUnavailable(ImageError):
    """An image's pixels cannot be had (missing file, failed download, undecodable bytes);
    ``reason`` is short and complete, and the engine prefixes the checklist's FILE:LINE."""
