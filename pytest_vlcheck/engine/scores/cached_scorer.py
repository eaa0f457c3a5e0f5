"""A scorer behind its caches: what was computed is kept in memory and in the embedding
cache on disk, so the runner asks for each input once and the model sees only the misses.

``CachedScorer`` wraps a ``ScorerSource`` (the typed scorer, built on first need, and its
cache namespace). For each kind of input the runner first asks what is still to compute
(``texts_to_encode``, ``images_to_encode``, ``pairs_to_score``: memory, then the disk cache,
counted in the stats), then hands it the batches it planned (``encode_texts``,
``encode_images``, ``score_pairs``): each batch goes to the model once, is checked against
the protocol, timed, and kept in both places. ``ScoreMemory`` is the memory: fp64 unit
vectors and fp32 scores of one set of weights (lifetime: its runner's, emptied when a built
scorer's fingerprint changes: ``refresh``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from pytest_vlcheck.engine.runner.stats import ScoringStats
from pytest_vlcheck.engine.scores.content_keys import pair_key, text_key
from pytest_vlcheck.engine.scores.embedding_width import EmbeddingWidth
from pytest_vlcheck.engine.scores.scorer_source import ScorerSource
from pytest_vlcheck.errors import ScorerProtocolError
from pytest_vlcheck.images.refs import ImageKey, ImageRef

Pair = tuple[ImageKey, str]
Item = TypeVar("Item", bound=Hashable)
"""What a vector in memory belongs to: a text or an image's key."""
Common = Callable[[Sequence[Hashable], set[Any]], set[Any]]
"""Of the cache hits of some items, those to take (``BatchShare.common``: under
``torch.distributed``, the ones every rank read, so every rank plans the same batches)."""


def _all_hits(items: Sequence[Hashable], hits: set[Any]) -> set[Any]:
    return hits


@dataclass
class ScoreMemory:
    """One set of weights' unit embeddings and pair scores, in memory."""

    images: dict[ImageKey, np.ndarray] = field(default_factory=dict)
    texts: dict[str, np.ndarray] = field(default_factory=dict)
    pairs: dict[Pair, np.float32] = field(default_factory=dict)
    fingerprint: str | None = None
    """The built scorer's fingerprint the memory belongs to (None: not read yet)."""

    def forget_images(self, keys: set[ImageKey]) -> None:
        """Drop what was computed from ``keys`` (their files changed)."""
        self.images = {k: v for k, v in self.images.items() if k not in keys}
        self.pairs = {p: v for p, v in self.pairs.items() if p[0] not in keys}

    def clear(self) -> None:
        self.images.clear()
        self.texts.clear()
        self.pairs.clear()


@dataclass
class CachedScorer:
    """``source``'s scorer behind the memory and the embedding cache; ``stats`` counts."""

    source: ScorerSource
    stats: ScoringStats
    width: EmbeddingWidth
    memory: ScoreMemory = field(default_factory=ScoreMemory)

    def refresh(self, changed_files: set[ImageKey]) -> None:
        """A new call from the user: what came from changed files goes; everything goes when
        the built scorer's fingerprint changed since, or when it has none (nothing then
        tells its weights apart)."""
        if changed_files:
            self.memory.forget_images(changed_files)
        if not self.source.built:
            return
        current = self.source.pin_fingerprint()
        if not current or current != self.memory.fingerprint:
            self.memory.clear()
            self.width.forget()
        self.memory.fingerprint = current

    def call(self, method: str, expected: int, *args: Any) -> np.ndarray:
        """One timed call into the scorer (``ScorerSource.call``)."""
        started = time.perf_counter()
        try:
            return self.source.call(method, expected, *args)
        finally:
            self.stats.model_seconds += time.perf_counter() - started

    def texts_to_encode(self, texts: Iterable[str], common: Common = _all_hits) -> list[str]:
        """The unique ``texts`` neither in memory nor in the cache (those hits are loaded)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.memory.texts]
        keys = {t: text_key(t) for t in todo}
        hits = common(todo, self._from_cache("text", keys, self.memory.texts))
        self.stats.texts_cached += len(hits)
        return [t for t in todo if t not in hits]

    def encode_texts(self, batch: list[str]) -> None:
        self.stats.encode_text_calls += 1
        vectors = self.call("encode_texts", len(batch), batch)
        keys = {t: text_key(t) for t in batch}
        self._keep("text", batch, keys, vectors, self.memory.texts)
        self.stats.texts_encoded += len(batch)

    def images_to_encode(
        self, refs: list[ImageRef], keys: dict[ImageKey, str], common: Common = _all_hits
    ) -> list[ImageRef]:
        """``refs`` (not in memory) whose vectors the cache does not hold under their content
        ``keys``."""
        found = {r.key: keys[r.key] for r in refs if r.key in keys}
        # every planned image is put to ``common``, not only those with a content key: a rank
        # whose cache is off (or was turned off by a locked file) reports misses, not less work
        hits = common([r.key for r in refs], self._from_cache("image", found, self.memory.images))
        self.stats.images_cached += len(hits)
        return [r for r in refs if r.key not in hits]

    def encode_images(
        self, method: str, batch: list[ImageRef], inputs: list[Any], keys: dict[ImageKey, str]
    ) -> None:
        """One batch of decoded (``encode_images``) or preprocessed (``encode_preprocessed``)
        images; cached under their content ``keys``."""
        self.stats.encode_image_calls += 1
        vectors = self.call(method, len(batch), inputs)
        self._keep("image", [r.key for r in batch], keys, vectors, self.memory.images)
        self.stats.images_encoded += len(batch)

    def cosine_scores(self, pairs: list[Pair], model: str) -> None:
        """Scores of ``pairs`` from the vectors in memory."""
        if not pairs:
            return
        images = np.stack([self.memory.images[key] for key, _ in pairs])
        texts = np.stack([self.memory.texts[text] for _, text in pairs])
        self.memory.pairs.update(zip(pairs, cosines(images, texts, model), strict=True))

    def pairs_to_score(self, pairs: list[Pair], image_keys: dict[ImageKey, str]) -> list[Pair]:
        """Cross-encoder ``pairs`` the cache does not hold (hits go to memory)."""
        keys = self.pair_keys(pairs, image_keys)
        found = self.source.cached("pair", list(keys.values()))
        for pair, key in keys.items():
            row = found.get(key)
            if row is not None and row.shape == (1,):
                self.memory.pairs[pair] = np.float32(row[0])
                self.stats.pairs_cached += 1
        return [p for p in pairs if p not in self.memory.pairs]

    def score_pairs(
        self, batch: list[Pair], images: list[Any], image_keys: dict[ImageKey, str]
    ) -> None:
        """One batch of cross-encoder pairs, ``images`` decoded in the pairs' order."""
        self.stats.score_pair_calls += 1
        texts = [text for _, text in batch]
        scores = self.call("score_pairs", len(batch), images, texts).reshape(-1)
        self.memory.pairs.update(zip(batch, scores, strict=True))
        keys = self.pair_keys(batch, image_keys)
        self.source.stored(
            "pair", {keys[p]: scores[i : i + 1] for i, p in enumerate(batch) if p in keys}
        )
        self.stats.pairs_scored += len(batch)

    @staticmethod
    def pair_keys(pairs: list[Pair], image_keys: dict[ImageKey, str]) -> dict[Pair, str]:
        """Cache keys of the pairs whose image has a content key."""
        return {p: pair_key(image_keys[p[0]], text_key(p[1])) for p in pairs if p[0] in image_keys}

    def _from_cache(
        self, kind: str, keys: dict[Item, str], into: dict[Item, np.ndarray]
    ) -> set[Item]:
        """The items of ``keys`` whose vectors the cache holds, put (unit norm) ``into``."""
        found = self.source.cached(kind, list(keys.values()))
        hits = [item for item, key in keys.items() if _is_row(found.get(key))]
        if hits:
            cached = [found[keys[item]] for item in hits]
            self.width.cached(cached)
            into.update(zip(hits, _normalise(np.stack(cached)), strict=True))
        return set(hits)

    def _keep(
        self,
        kind: str,
        items: list[Item],
        keys: dict[Item, str],
        vectors: np.ndarray,
        into: dict[Item, np.ndarray],
    ) -> None:
        """Vectors the model just computed for ``items``: kept (unit norm) ``into`` and cached
        under the items' keys (an item without one is not cached)."""
        self.width.computed(vectors)
        self.source.stored(
            kind, {keys[i]: v for i, v in zip(items, vectors, strict=True) if i in keys}
        )
        into.update(zip(items, _normalise(vectors), strict=True))


def cosines(images: np.ndarray, texts: np.ndarray, model: str) -> npt.NDArray[np.float32]:
    """Row-wise dot products of unit image and text rows, as fp32; embeddings of two widths
    cannot share a space, which is the scorer's mistake, said in one line."""
    if images.shape[1] != texts.shape[1]:
        raise ScorerProtocolError(
            f"model '{model}': encode_images gives {images.shape[1]}-d embeddings and "
            f"encode_texts {texts.shape[1]}-d; expected one width (a shared embedding space)"
        )
    dots: npt.NDArray[np.float32] = np.einsum("ij,ij->i", images, texts).astype(np.float32)
    return dots


def _is_row(vector: np.ndarray | None) -> bool:
    """A cached embedding that is usable: one row of finite values."""
    return vector is not None and vector.ndim == 1 and bool(np.isfinite(vector).all())


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float64 (a zero row stays zero and scores 0)."""
    rows = vectors.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)
