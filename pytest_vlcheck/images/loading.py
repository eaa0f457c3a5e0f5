"""Turn an ``ImageRef`` into RGB pixels: open the file, fetch the URL or render the scene, crop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable

if TYPE_CHECKING:
    from PIL.Image import Image


@dataclass(frozen=True)
class ImageLoader:
    """Loads images for the engine; ``url_cache_dir`` is where downloaded URLs are kept."""

    url_cache_dir: Path | None = None

    def __call__(self, ref: ImageRef) -> Image:
        """The RGB image of ``ref``, cropped; raises ``ImageUnavailable`` with a reason."""
        image = self._source(ref)
        return crop_image(image, ref) if ref.crop is not None else image

    def _source(self, ref: ImageRef) -> Image:
        if ref.kind == "scene":
            from pytest_vlcheck.images.scenes import render_canonical

            return render_canonical(ref.location)
        if ref.kind == "url":
            from pytest_vlcheck.images.url_cache import fetch

            if self.url_cache_dir is None:
                raise ImageUnavailable("URL images need a cache directory (--vl-cache-dir)")
            return open_rgb(fetch(ref.location, self.url_cache_dir, sha256=ref.sha256))
        return open_rgb(Path(ref.location))


def open_rgb(path: Path) -> Image:
    """Decode an image file fully into RGB, or explain why it cannot be."""
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        raise ImageUnavailable(f"file not found: {path}")
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageUnavailable(f"cannot decode {path}: {exc}") from None


def crop_image(image: Image, ref: ImageRef) -> Image:
    """Cut ``image`` to the ref's box (pixels, or fractions of width and height)."""
    assert ref.crop is not None
    x, y, w, h = ref.crop
    if ref.crop_relative:
        x, w = x * image.width, w * image.width
        y, h = y * image.height, h * image.height
    left, top = round(x), round(y)
    right, bottom = min(image.width, round(x + w)), min(image.height, round(y + h))
    if right <= left or bottom <= top:
        raise ImageUnavailable(
            f"crop {list(ref.crop)} lies outside the "
            f"{image.width}x{image.height} image {ref.written}"
        )
    return image.crop((left, top, right, bottom))
