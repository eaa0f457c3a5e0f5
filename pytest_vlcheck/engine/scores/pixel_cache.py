"""Prepared model inputs on disk, so a new checkpoint of a known architecture renders and
decodes nothing.

In CI every run is a new checkpoint: the embedding cache, keyed by the weights, never hits,
yet the scenes and the pixels at the model's input size are the same for every checkpoint
of one architecture. This cache keeps them: the uint8 pixels an open_clip eval transform
makes before ``ToTensor`` (``models.pixels.compact``; what ``preprocess_image`` returns and
the live image store keeps), keyed by the image's content key (a file by its bytes' sha256,
a scene by its canonical spec, plus crop and perturbation: ``content_keys.image_key``) under
a namespace naming the exact transform (each step of it, mean and std, ``--vl-decode``, and
the Pillow and vlcheck versions that computed them).

It is an ``EmbeddingCache`` in a database of its own (``pixels.sqlite3`` beside
``embeddings.sqlite3``), so it has the same guarantees: one transaction per write, WAL for
concurrent readers and writers, a checksum per row, a least-recently-used bound of its own
(``--vl-cache-size`` bounds each database), a damaged file moved aside. Rows are the pixels'
bytes compressed by zlib at level 1 (the standard library's; rendered scenes shrink about
100x, 0.3 ms per 224-px image); a row that fails its checksum or does not decompress to its
shape is deleted with one ``CacheWarning`` and the image prepared again. No pickle.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import warnings
import zlib
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pytest_vlcheck.engine.scores.embedding_cache import CacheWarning, EmbeddingCache, checksum
from pytest_vlcheck.models.pixels.compact import CompactTransform

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pytest_vlcheck.images.refs import ImageKey

PIXELS_DB = "pixels.sqlite3"
FORMAT = "u1-zlib"
"""A row's dtype column: uint8 pixels, zlib-compressed."""
LEVEL = 1


class PixelCache(EmbeddingCache):
    """uint8 pixel arrays by (transform namespace, content key) in ``root/pixels.sqlite3``."""

    db_name = PIXELS_DB
    label = "pixel cache"
    _damaged = 0

    @staticmethod
    def encode(vector: Any) -> tuple[str, str, bytes, bytes, int]:
        """zlib of the pixels' bytes; the bound counts the compressed bytes (the disk's)."""
        array = np.ascontiguousarray(vector, dtype=np.uint8)
        shape = ",".join(str(n) for n in array.shape)
        data = zlib.compress(array.tobytes(), LEVEL)
        return FORMAT, shape, data, checksum(FORMAT, shape, data), len(data)

    def decode(self, dtype: str, shape: str, data: bytes, digest: bytes) -> Any:
        """The pixels (writeable, C-contiguous, as the transform returns them), or None for
        a damaged row (counted: ``get_many`` warns; the base class deletes the row)."""
        pixels = _pixels(dtype, shape, data, digest)
        if pixels is None:
            self._damaged += 1
        return pixels

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached pixels among ``keys``, with one warning for damaged rows dropped."""
        self._damaged = 0
        found = super().get_many(namespace, keys)
        if self._damaged:
            warnings.warn(
                f"{self.path}: {self._damaged} damaged pixel cache entries dropped; those "
                "images are prepared again",
                CacheWarning,
                stacklevel=2,
            )
        return found

    def put_rows(self, namespace: str, rows: Mapping[str, tuple[Any, ...]]) -> None:
        """``put_many`` of rows already through ``encode`` (compressed in other threads)."""
        if rows:
            now = int(time.time())
            values = [(key, *row, now) for key, row in rows.items()]
            self._guarded(lambda db: self._put(db, namespace, values), None)


def _pixels(dtype: str, shape: str, data: bytes, digest: bytes) -> npt.NDArray[np.uint8] | None:
    """A row's pixels, or None when its format, checksum, compression or size is off."""
    if dtype != FORMAT or not isinstance(data, bytes) or checksum(dtype, shape, data) != digest:
        return None
    try:
        dims = tuple(int(n) for n in shape.split(","))
        raw = zlib.decompress(data)
    except (ValueError, zlib.error):
        return None
    if math.prod(dims) != len(raw):
        return None
    pixels: npt.NDArray[np.uint8] = np.frombuffer(raw, dtype=np.uint8).reshape(dims).copy()
    return pixels


def transform_namespace(scorer: Any, decode: str) -> str | None:
    """The namespace of the pixels ``scorer.preprocess_image`` makes, or None when they
    cannot be cached: only open_clip's eval transforms (a ``compact`` form) make uint8
    pixels a later run may read instead."""
    compact = getattr(scorer, "compact", None)
    if not isinstance(compact, CompactTransform):
        return None
    parts = [FORMAT, compact.describe(), decode, _version("pillow"), _version("pytest-vlcheck")]
    return "pixels|" + hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


@dataclass
class PixelShelf:
    """One batch pass's view of the pixel cache: what it holds for a batch (looked up in
    one query), and what was prepared, written once per batch (a transaction each)."""

    cache: PixelCache
    namespace: str
    content_keys: Mapping[ImageKey, str]
    _new: dict[str, tuple[Any, ...]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def beside(
        cls,
        cache: EmbeddingCache | None,
        namespace: str | None,
        content_keys: Mapping[ImageKey, str],
    ) -> PixelShelf | None:
        """A shelf on the pixel cache beside ``cache`` (None: no cache, or no namespace)."""
        if cache is None or not cache.enabled or namespace is None:
            return None
        pixels = PixelCache(cache.path.parent, max_bytes=cache.max_bytes)
        return cls(pixels, namespace, content_keys) if pixels.enabled else None

    def recall(self, keys: Sequence[ImageKey]) -> dict[ImageKey, np.ndarray]:
        """The cached pixels of ``keys`` (those with a content key), by image key."""
        content = {self.content_keys[k]: k for k in keys if k in self.content_keys}
        found = self.cache.get_many(self.namespace, list(content))
        return {content[key]: pixels for key, pixels in found.items()}

    def offer(self, key: ImageKey, item: Any) -> None:
        """Compress ``item`` for the next write when it is uint8 pixels of a keyed image
        (thread-safe: the loader threads compress beside each other)."""
        content = self.content_keys.get(key)
        if content is not None and isinstance(item, np.ndarray) and item.dtype == np.uint8:
            row = self.cache.encode(item)
            with self._lock:
                self._new[content] = row

    def write(self) -> None:
        """Store what was offered since the last write, in one transaction."""
        with self._lock:
            new, self._new = self._new, {}
        self.cache.put_rows(self.namespace, new)

    def close(self) -> None:
        self.cache.close()
