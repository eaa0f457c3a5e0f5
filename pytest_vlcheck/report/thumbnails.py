"""Thumbnails of failing examples: small JPEGs in ``REPORT_DIR/thumbnails/``, named by content.

Whoever evaluates a test (a serial run or an xdist worker) writes the images of the failures it
keeps, cropped as scored and with scenes rendered; ``report.html`` embeds them as data URIs so
it stays one self-contained file, while ``matrix.json`` names them (each failure's
``thumbnails``): the folder is where ``vlcheck report`` and ``merge`` embed them from again.
Names are the hash of the JPEG bytes, so workers writing the same image at once write the same
file, and a name read from a ``matrix.json`` can never point outside the folder. Writing a
report keeps only the files its results name (``prune_thumbnails``): a folder written by
several runs holds no image that nothing references.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vlcheck.atomic import atomic_write_bytes
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable

if TYPE_CHECKING:
    from PIL.Image import Image

    from pytest_vlcheck.results import CapabilityResult

__all__ = [
    "THUMBNAIL_DIR",
    "THUMBNAIL_SIZE",
    "copy_thumbnails",
    "prune_thumbnails",
    "thumbnail_data_uris",
    "thumbnail_jpeg",
    "thumbnail_names",
    "write_thumbnails",
]

THUMBNAIL_DIR = "thumbnails"
THUMBNAIL_SIZE = 128
"""Pixels on the longest side (smaller images are not enlarged)."""
JPEG_QUALITY = 80
_NAME = re.compile(r"[0-9a-f]{16}\.jpg")


def thumbnail_jpeg(image: Image) -> bytes:
    """``image`` shrunk to ``THUMBNAIL_SIZE`` px on its longest side, as JPEG bytes."""
    small = image.convert("RGB")
    small.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE))
    out = io.BytesIO()
    small.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue()


def write_thumbnails(
    refs: Sequence[ImageRef], load: Callable[[ImageRef], Image], directory: Path
) -> list[str]:
    """One thumbnail file name per ref, written into ``directory`` (created when needed).

    An example shows all its images or none: when one cannot be loaded the list is empty.
    """
    payloads = []
    for ref in refs:
        try:
            payloads.append(thumbnail_jpeg(load(ref)))
        except ImageUnavailable:
            return []
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for data in payloads:
        name = hashlib.sha256(data).hexdigest()[:16] + ".jpg"
        if not (directory / name).exists():
            atomic_write_bytes(directory / name, data)
        names.append(name)
    return names


def thumbnail_names(results: Iterable[CapabilityResult]) -> list[str]:
    """Every thumbnail file the results' failure examples name, once each, in order."""
    names = (n for r in results for f in r.failures for n in f.thumbnails)
    return list(dict.fromkeys(names))


def thumbnail_data_uris(report_dir: Path, names: Iterable[str]) -> dict[str, str]:
    """File name -> ``data:image/jpeg;base64,...`` for the names found in
    ``report_dir/thumbnails/``; names that are missing or not thumbnail names are left out
    (the report then shows no image for them)."""
    uris = {}
    for name in names:
        path = report_dir / THUMBNAIL_DIR / name
        if _NAME.fullmatch(name) and path.is_file():
            uris[name] = "data:image/jpeg;base64," + base64.b64encode(path.read_bytes()).decode()
    return uris


def copy_thumbnails(source: Path, target: Path, names: Iterable[str]) -> None:
    """Copy the named thumbnails that exist from ``source/thumbnails`` into
    ``target/thumbnails`` (a re-rendered report keeps its images beside its ``matrix.json``)."""
    if source.resolve() == target.resolve():
        return
    for name in names:
        path = source / THUMBNAIL_DIR / name
        if _NAME.fullmatch(name) and path.is_file():
            (target / THUMBNAIL_DIR).mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target / THUMBNAIL_DIR / name, path.read_bytes())


def prune_thumbnails(folder: Path, names: Iterable[str]) -> None:
    """Delete the thumbnails of ``folder/thumbnails`` that ``names`` (the report's) do not
    name (an earlier run's failures), and the folder itself when none is left."""
    directory = folder / THUMBNAIL_DIR
    if not directory.is_dir():
        return
    keep = set(names)
    for path in directory.iterdir():
        if _NAME.fullmatch(path.name) and path.name not in keep:
            path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: files of the user's own stay
        directory.rmdir()
