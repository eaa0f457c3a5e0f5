"""Images on their way into a model: content keys, decoding and preprocessing in threads.

The runner hands an ``ImageFeed`` the images it must encode; the feed keys them by content
for the embedding cache (file images hashed in parallel through the cache's stat index),
decodes and, where the scorer preprocesses on its own (``preprocess_image``), preprocesses
them in a thread pool a few batches ahead of the model, and records each image that cannot
be loaded with the loader's reason instead of raising. A live model's runner keeps the
preprocessed images across calls in its ``ImageStore``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.cores import rank_share, usable_cores
from pytest_vlcheck.engine.feed.on_device import DeviceDecode, OnDevice
from pytest_vlcheck.engine.feed.store import ImageStore
from pytest_vlcheck.engine.scores.content_keys import image_key
from pytest_vlcheck.engine.scores.embedding_cache import RACY_SECONDS
from pytest_vlcheck.engine.scores.pixel_cache import PixelShelf
from pytest_vlcheck.images.loading import ImageLoader, over_pixel_limit
from pytest_vlcheck.images.pool import LOAD_THREADS, preparation, shared_processes
from pytest_vlcheck.images.refs import ImageKey, ImageRef, ImageUnavailable
from pytest_vlcheck.models.hashing import sha256_file

if TYPE_CHECKING:
    from PIL.Image import Image

    from pytest_vlcheck.engine.runner.stats import ScoringStats
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

FileStamp = tuple[int, int, int] | None
"""A file's (size, mtime_ns, inode), or None when it cannot be stat'ed."""
FileState = tuple[FileStamp, str | None]
"""A loaded file's stamp and, for a file written moments before, its sha256."""
ImageLoad = Callable[[ImageRef], "Image"]


@dataclass
class ImageFeed:
    """Decoded, keyed images for one runner; ``unavailable`` maps an image's key to why it
    could not be loaded, ``content_keys`` to its embedding-cache key."""

    load_image: ImageLoad
    cache: EmbeddingCache | None
    stats: ScoringStats = field(repr=False)
    unavailable: dict[ImageKey, str] = field(default_factory=dict, repr=False)
    content_keys: dict[ImageKey, str] = field(default_factory=dict, repr=False)
    store: ImageStore = field(default_factory=ImageStore)
    """Preprocessed images kept for later calls (a live model's runner gives it a budget)."""
    _files: dict[ImageKey, tuple[str, FileState]] = field(default_factory=dict, repr=False)

    def changed_files(self) -> set[ImageKey]:
        """The file images whose file changed (or appeared, or went) since they were loaded;
        everything kept about them is forgotten, so a later call loads them again. A call
        from the user starts with this (a file edited between two probes is read anew)."""
        changed = {key for key, (path, state) in self._files.items() if _changed(path, state)}
        self.store.forget(changed)
        for key in changed:
            self.unavailable.pop(key, None)
            self.content_keys.pop(key, None)
            del self._files[key]
        return changed

    def key(self, refs: Sequence[ImageRef]) -> None:
        """Content keys of ``refs`` when the cache is on: file images hashed in parallel, with
        one stat-index query and one index write for all of them."""
        if self.cache is None or not self.cache.enabled:
            return
        todo = [r for r in refs if r.key not in self.content_keys and r.key not in self.unavailable]
        files = list(dict.fromkeys(Path(r.location) for r in todo if r.kind == "file"))
        with loader_pool() as pool:
            digests = dict(zip(files, self.cache.file_digests(files, pool.map), strict=True))

        def digest(path: Path) -> str:
            found = digests[path]
            if isinstance(found, OSError):
                raise found
            if over_pixel_limit(found.pixels):  # refused, cached or not: the loader says why
                raise ImageUnavailable("over the pixel limit")
            return found.sha256

        for ref in todo:
            try:
                self.content_keys[ref.key] = image_key(ref, digest)
            except ImageUnavailable:
                self.load_one(ref)  # records the loader's own reason, as an uncached run would

    def loaded_batches(
        self,
        batches: list[list[ImageRef]],
        preprocess: Callable[[Image], Any] | None,
        user_code: Callable[..., Any],
        *,
        overlap: bool = True,
        device: DeviceDecode | None = None,
        workers: int | None = None,
        pixels: str | None = None,
    ) -> Iterator[tuple[list[ImageRef], list[Any]]]:
        """Batches of decoded (and, with ``preprocess``, preprocessed) images. With
        ``overlap`` (a model on an accelerator) the next batches are prepared in the pool
        while the model runs; without (a model on the CPU, whose forward pass takes every
        core) each batch is prepared by one thread per core and then encoded: loader threads
        beside the forward pass only slowed both (the bundled suite on ``tiny``: 26-28 s
        against 24.7 s). With ``overlap`` this process's share of the cores prepares images
        (at most ``workers``, ``--vl-workers``), the tool's own loading in worker processes
        (``image_processes.preparation``). With ``device`` (``--vl-decode gpu``) the
        plain JPEG files of a batch are decoded together on the model's device, the rest as
        before. With ``pixels`` (the transform's namespace in the pixel cache beside the
        embedding cache) what an earlier run prepared is read instead, and what is prepared
        here is written there (``engine.scores.pixel_cache``)."""

        keep = self.store.budget > 0 and preprocess is not None
        shelf = PixelShelf.beside(self.cache, pixels if preprocess else None, self.content_keys)
        threads, processes = preparation(workers) if overlap else (cpu_threads(), 0)
        load: ImageLoad = self.load_image
        if processes and isinstance(load, ImageLoader):
            load = shared_processes(processes, load.url_cache_dir) or load

        def prepare(ref: ImageRef) -> tuple[Any, bool]:
            """The model input of ``ref`` (not in the store) and False: not recalled."""
            if device is not None and device.fallback(ref) is None:
                self._files[ref.key] = (ref.location, _file_state(ref.location))
                return OnDevice(ref.location), False
            image = self.load_one(ref, load)
            if image is None or preprocess is None:
                return image, False
            item = user_code("preprocess_image", preprocess, image)
            if shelf is not None:
                shelf.offer(ref.key, item)
            return item, False

        def start(batch: list[ImageRef]) -> list[Future[tuple[Any, bool]] | tuple[Any, bool]]:
            """What the store holds, recalled here (a hand-off to a thread per image cost
            more than the lookup), and the rest submitted to the pool."""
            recalled = {r.key: self.store.recall(r.key) for r in batch} if keep else {}
            missing = [r for r in batch if recalled.get(r.key) is None]
            stored = {} if shelf is None else self._from_disk(shelf, missing)
            on_disk.update(stored)
            return [
                (recalled[r.key], True)
                if recalled.get(r.key) is not None
                else (stored[r.key], False)
                if r.key in stored
                else pool.submit(prepare, r)
                for r in batch
            ]

        on_disk: set[ImageKey] = set()  # what the pixel cache gave (not prepared here)
        closing = contextlib.nullcontext() if shelf is None else contextlib.closing(shelf)
        with loader_pool(threads) as pool, closing:
            ahead = 2 if overlap else 0  # batches in flight beyond the one being encoded
            pending = [start(batch) for batch in batches[:ahead]]
            for index, batch in enumerate(batches):
                if index + ahead < len(batches):
                    pending.append(start(batches[index + ahead]))
                started = time.perf_counter()
                prepared = [p if isinstance(p, tuple) else p.result() for p in pending[index]]
                if device is not None:
                    prepared = self._on_device(device, prepared)
                self.stats.load_seconds += time.perf_counter() - started
                images = [item for item, _ in prepared]
                self._count(batch, prepared, keep, on_disk)
                if shelf is not None:
                    shelf.write()
                kept = [(r, im) for r, im in zip(batch, images, strict=True) if im is not None]
                yield [r for r, _ in kept], [im for _, im in kept]

    def _from_disk(self, shelf: PixelShelf, wanted: list[ImageRef]) -> dict[ImageKey, Any]:
        """The pixel cache's pixels of ``wanted`` (the images the store does not hold; a
        file's state recorded, as loading it would: a later call sees it change)."""
        found = shelf.recall([r.key for r in wanted])
        for ref in wanted:
            if ref.key in found and ref.kind == "file":
                self._files[ref.key] = (ref.location, _file_state(ref.location))
        self.stats.images_from_disk += len(found)
        return found

    def _on_device(
        self, device: DeviceDecode, prepared: list[tuple[Any, bool]]
    ) -> list[tuple[Any, bool]]:
        """``prepared`` with its ``OnDevice`` files decoded, together, on the device."""
        where = [i for i, (item, _) in enumerate(prepared) if isinstance(item, OnDevice)]
        pixels = device.pixels([prepared[i][0].location for i in where])
        self.stats.images_on_device += len(where)
        self.stats.images_decode_fallback += sum(not kept for _, kept in prepared) - len(where)
        done = list(prepared)
        for i, item in zip(where, pixels, strict=True):
            done[i] = (item, False)
        return done

    def _count(
        self,
        batch: list[ImageRef],
        prepared: list[tuple[Any, bool]],
        keep: bool,
        on_disk: set[ImageKey],
    ) -> None:
        """Count what was prepared and what the store gave (the pixel cache's are counted
        as read); offer the store the new inputs here, in plan order (not from the pool's
        threads), so that over the budget the part kept is the first images of the plan,
        the same at every call."""
        for ref, (item, recalled) in zip(batch, prepared, strict=True):
            if recalled:
                self.stats.images_recalled += 1
            elif item is not None:
                if ref.key not in on_disk:
                    self.stats.images_prepared += 1
                if keep and str(getattr(item, "device", "cpu")) == "cpu":  # host memory only
                    self.store.offer(ref.key, item)

    def load_all(self, refs: Sequence[ImageRef]) -> list[Image | None]:
        """Decode ``refs`` in parallel; failures are recorded, not raised."""
        started = time.perf_counter()
        with loader_pool() as pool:
            results = list(pool.map(self.load_one, refs))
        self.stats.load_seconds += time.perf_counter() - started
        return results

    def load_one(self, ref: ImageRef, load: ImageLoad | None = None) -> Image | None:
        """The decoded image (by ``load``, else the feed's loader), or None with the reason
        recorded."""
        if ref.kind == "file":
            self._files[ref.key] = (ref.location, _file_state(ref.location))
        try:
            return (load or self.load_image)(ref)
        except ImageUnavailable as exc:
            self.unavailable[ref.key] = exc.reason
            return None


def cpu_threads() -> int:
    """Loader threads beside a model on the CPU: one per core of this process's machine
    share among torchrun's ranks (measured best; xdist workers each take all, as before)."""
    return rank_share(usable_cores())


@contextlib.contextmanager
def loader_pool(threads: int | None = None) -> Iterator[ThreadPoolExecutor]:
    """The decoding threads (default: ``LOAD_THREADS`` shared by the machine's torchrun
    ranks). When the caller stops early (Ctrl-C, an error, a consumer that stops reading
    batches), what has not started is cancelled, not finished first: a run stops within the
    images already being decoded, not the batches queued behind them."""
    if threads is None:
        threads = rank_share(LOAD_THREADS)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="vlcheck-load")
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _stamp(path: str) -> FileStamp:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def _file_state(path: str) -> FileState:
    """What tells a later call whether the file changed: its stamp, and the sha256 of its
    bytes when it was written moments ago (another write within the same clock tick would
    leave the stamp as it is: "racy" files are compared by content, as git does)."""
    stamp = _stamp(path)
    if stamp is not None and time.time_ns() - stamp[1] < RACY_SECONDS * 1e9:
        return stamp, _digest(path)
    return stamp, None


def _changed(path: str, state: FileState) -> bool:
    stamp, digest = state
    return _stamp(path) != stamp or (digest is not None and _digest(path) != digest)


def _digest(path: str) -> str | None:
    try:
        return sha256_file(Path(path))
    except OSError:
        return None
