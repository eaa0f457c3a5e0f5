"""Turn an ``ImageRef`` into RGB pixels: open the file, fetch the URL or render the scene, crop.

Every way an image can fail (missing, a symlink loop, unreadable, undecodable, too many
pixels, a crop outside it) is an ``ImageUnavailable`` with a short reason; the engine adds the
checklist's ``FILE:LINE`` and the image as written.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable

if TYPE_CHECKING:
    from PIL.Image import Image

MAX_PIXELS_OPTION = "--vl-max-image-pixels"


@dataclass(frozen=True)
class ImageLoader:
    """Loads images for the engine; ``url_cache_dir`` is where downloaded URLs are kept."""

    url_cache_dir: Path | None = None

    def __call__(self, ref: ImageRef) -> Image:
        """The RGB image of ``ref``, cropped, then perturbed; raises ``ImageUnavailable``
        with a reason."""
        image = self._source(ref)
        image = crop_image(image, ref) if ref.crop is not None else image
        return image if ref.perturb is None else ref.perturb.apply(image)

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


def set_max_image_pixels(limit: int | None) -> None:
    """Set the largest image (width x height) that is decoded; ``None`` removes the limit.

    This is Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``, about 89
    million pixels by default), shared by the whole process; ``open_rgb`` refuses anything
    larger with a reason naming ``--vl-max-image-pixels``.
    """
    from PIL import Image

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise VlcheckUserError(
            f"{MAX_PIXELS_OPTION}={limit!r}: expected a positive whole number of pixels"
        )
    Image.MAX_IMAGE_PIXELS = limit


def open_rgb(path: Path) -> Image:
    """Decode an image file fully into RGB, or explain why it cannot be."""
    from PIL import Image, UnidentifiedImageError

    _check_file(path)
    try:
        with Image.open(path) as image:
            _check_pixels(image.width, image.height)
            rgb: Image.Image = image.convert("RGB")  # typed: a local PIL import reads as Any
            return rgb
    except Image.DecompressionBombError as exc:
        raise ImageUnavailable(_too_large(str(exc))) from None
    except PermissionError:
        raise ImageUnavailable(f"cannot read {path}: permission denied") from None
    except UnidentifiedImageError:
        raise ImageUnavailable(
            f"cannot decode {path}: not an image format Pillow reads (or a corrupt file)"
        ) from None
    except (OSError, ValueError, SyntaxError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ImageUnavailable(f"cannot decode {path}: {detail}") from None


def _check_file(path: Path) -> None:
    """A clear reason for a path that is missing, loops, or is not a regular file."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ImageUnavailable(f"symlink loop: {path} never reaches a file") from None
        if exc.errno == errno.EACCES:
            raise ImageUnavailable(f"cannot read {path}: permission denied") from None
        raise ImageUnavailable(f"file not found: {path}") from None
    if not path.is_file():
        raise ImageUnavailable(f"not a file: {path} (expected an image file)")


def header_pixels(path: Path) -> int | None:
    """width x height as the file's header says (nothing decoded), None for a file that is
    no image Pillow reads: what the embedding cache keeps beside a file's digest, so a cached
    image is held to ``--vl-max-image-pixels`` as a decoded one is (``over_pixel_limit``)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            pixels: int = image.width * image.height  # typed: a local PIL import reads as Any
            return pixels
    except Image.DecompressionBombError as exc:  # past twice Pillow's limit: it says how many
        found = re.search(r"\((\d+) pixels\)", str(exc))
        return int(found.group(1)) if found else None
    except Exception:
        return None


def over_pixel_limit(pixels: int | None) -> bool:
    """Whether an image of ``pixels`` is over the current limit (the loader refuses it)."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    return pixels is not None and limit is not None and pixels > limit


def _check_pixels(width: int, height: int) -> None:
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        raise ImageUnavailable(_too_large_text(width * height, limit, f"{width}x{height}"))


def _too_large(message: str) -> str:
    """Pillow's own bomb error (raised past twice the limit) in the same words as ours."""
    from PIL import Image

    found = re.search(r"\((\d+) pixels\)", message)
    pixels = int(found.group(1)) if found else None
    return _too_large_text(pixels, Image.MAX_IMAGE_PIXELS or 0, None)


def _too_large_text(pixels: int | None, limit: int, size: str | None) -> str:
    what = f"{size} = {pixels:,} pixels" if size else f"{pixels:,} pixels" if pixels else "it"
    return (
        f"image too large to decode safely ({what}, over the limit of {limit:,} pixels that "
        f"guards against decompression bombs); raise the limit with {MAX_PIXELS_OPTION}=N"
    )


def crop_image(image: Image, ref: ImageRef) -> Image:
    """Cut ``image`` to the ref's box (pixels, or fractions of width and height); a box that
    runs past an edge is clipped to the image, one that misses it is an error."""
    assert ref.crop is not None
    x, y, w, h = ref.crop
    if ref.crop_relative:
        x, w = x * image.width, w * image.width
        y, h = y * image.height, h * image.height
    left, top = max(0, round(x)), max(0, round(y))
    right, bottom = min(image.width, round(x + w)), min(image.height, round(y + h))
    if right <= left or bottom <= top:
        name = "crop_relative" if ref.crop_relative else "crop"
        raise ImageUnavailable(
            f"{name} {list(ref.crop)} lies outside the {image.width}x{image.height} image "
            f"{ref.written}; expected a box [x, y, w, h] that overlaps it"
        )
    return image.crop((left, top, right, bottom))
