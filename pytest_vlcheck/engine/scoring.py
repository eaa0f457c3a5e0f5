"""Score every unique image and text once per model, in batches, and remember the scores.

A ``ModelRunner`` owns one model for a session (or one xdist worker). ``prepare(tests)``
encodes, in batches of ``batch_size``, every image and text those tests need that has not
been encoded yet, then computes each unique (image, text) score once; ``grid(example)``
reads an example's scores from that cache, so equal inputs give bit-identical scores.
Dual-encoder scores are cosine similarities: embeddings are normalised and multiplied in
float64 and the score rounded to fp32, on which every decision is made.

With an ``EmbeddingCache``, raw fp32 embeddings (and cross-encoder pair scores) are kept on
disk under the namespace ``ScorerSource`` names (the model's identity, preprocessing and
precision), keyed by content (``content_keys``); the model is built only when something is
missing. Images are decoded, and preprocessed when the scorer exposes
``preprocess_image`` + ``encode_preprocessed``, in a thread pool while the model runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_vlcheck.engine.batch_share import BatchShare, WholeShare
from pytest_vlcheck.engine.content_keys import pair_key, text_key
from pytest_vlcheck.engine.embedding_width import EmbeddingWidth
from pytest_vlcheck.engine.image_feed import LIVE_MEMO_BYTES, ImageFeed, ImageKey, ImageLoad
from pytest_vlcheck.engine.progress import Writer, tracked
from pytest_vlcheck.engine.scorer_source import ScorerSource, ScoringMode
from pytest_vlcheck.engine.stats import ScoringStats
from pytest_vlcheck.errors import ScorerProtocolError
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.models.protocol import (
    ModelOptions,
    RefPair,
    scorer_fingerprint,
)
from pytest_vlcheck.models.registry import (
    ModelSpec,
)
from pytest_vlcheck.tasks import Grid, get_task

if TYPE_CHECKING:
    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine.embedding_cache import EmbeddingCache


@dataclass(frozen=True)
class Unscorable:
    """An example whose images could not be loaded: which, and why (it gets no scores)."""

    refs: tuple[ImageRef, ...]
    reasons: tuple[str, ...]


@dataclass
class ModelRunner:
    """One model's scores: each unique input encoded once, in batches, kept in memory and
    in the embedding cache, and served as example grids. The scorer and its identity come
    from ``source`` (``ScorerSource``); memory is forgotten when the weights change
    (``refresh``).

    ``cache`` is the on-disk embedding cache (None: everything is encoded); ``progress``
    draws a progress line while images are encoded (None: silent).
    """

    spec: ModelSpec
    options: ModelOptions
    load_image: ImageLoad
    cache: EmbeddingCache | None = None
    progress: Writer | None = None
    stats: ScoringStats = field(default_factory=ScoringStats)
    source: ScorerSource = field(init=False, repr=False)
    _image_vectors: dict[ImageKey, np.ndarray] = field(default_factory=dict, repr=False)
    _text_vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _pair_scores: dict[tuple[ImageKey, str], np.float32] = field(default_factory=dict, repr=False)
    images: ImageFeed = field(init=False, repr=False)
    _memory_fingerprint: str | None = None
    _width: EmbeddingWidth = field(init=False, repr=False)
    share: BatchShare = field(default_factory=WholeShare, repr=False)  # batches encoded here

    def __post_init__(self) -> None:
        self.source = ScorerSource(self.spec, self.options, self.cache)
        self.images = ImageFeed(self.load_image, self.cache, self.stats)
        cache_file = None if self.cache is None else self.cache.path
        self._width = EmbeddingWidth(self.spec.text, cache_file)

    @classmethod
    def for_scorer(
        cls,
        spec: ModelSpec,
        scorer: Any,
        options: ModelOptions,
        load_image: ImageLoad,
        progress: Writer | None = None,
        cache: EmbeddingCache | None = None,
    ) -> ModelRunner:
        """A runner over a scorer built already (a live model, an object given to
        ``evaluate``): never rebuilt; its vectors go to a disk cache only when one is given
        (a benchmark handing a spec-built model a fresh cache)."""
        runner = cls(spec, options, load_image, cache, progress)
        runner.source = ScorerSource(spec, options, cache, scorer)
        runner.images.memo_bytes = LIVE_MEMO_BYTES
        return runner

    @property
    def mode(self) -> ScoringMode:
        """How this model scores (``ScorerSource.mode``)."""
        return self.source.mode

    @property
    def fingerprint(self) -> str:
        """The weights' fingerprint (``ScorerSource.fingerprint``)."""
        return self.source.fingerprint

    def match_scores(self, scores: np.ndarray) -> tuple[np.ndarray, str]:
        """Scores for a ``match`` decision and their kind (``ScorerSource.match_scores``)."""
        return self.source.match_scores(scores)

    def rebind(self, scorer: Any) -> None:
        """The same model wrapped anew for another call (``run.live_runners``): what was
        computed stays while its fingerprint holds (``refresh``), preprocessed images while
        its ``identity`` (a live scorer's architecture, preprocessing and precision) holds; the
        stats start again."""
        before = getattr(self.source.scorer, "identity", None)
        if before is None or before != getattr(scorer, "identity", None):
            self.images.forget_preprocessed()
        self.source = ScorerSource(self.spec, self.options, self.cache, scorer)
        self.stats = ScoringStats()
        self.images.stats = self.stats

    def refresh(self) -> None:
        """Start a new call from the user (``vl_model.score``, a training loop's probe):
        numbers belong to the weights at call time, so what was computed in memory is
        forgotten when the built scorer's fingerprint changed since, or when it has none
        (nothing then tells its weights apart); a file image changed since is read anew."""
        changed = self.images.changed_files()
        if changed:
            self._image_vectors = {k: v for k, v in self._image_vectors.items() if k not in changed}
            self._pair_scores = {p: v for p, v in self._pair_scores.items() if p[0] not in changed}
        if not self.source.built:
            return
        current = scorer_fingerprint(self.source.scorer)
        if not current or current != self._memory_fingerprint:
            self._image_vectors.clear()
            self._text_vectors.clear()
            self._pair_scores.clear()
            self._width.forget()
        self._memory_fingerprint = current

    def prepare(self, tests: Iterable[ChecklistTest]) -> None:
        """Score, in batches, everything ``tests`` need that is not cached yet."""
        self.prepare_grids(get_task(t.task).grid(e) for t in tests for e in t.examples)

    def prepare_grids(self, grids: Iterable[Grid]) -> None:
        """Score, in batches, every (image, text) pair of ``grids`` not cached yet (also for
        grids that belong to no checklist test: the ``vl_model`` fixture's ``score``)."""
        if self.mode == "refs":
            return  # reference lookups are cheap and per example: done in ``grid``
        images: dict[ImageKey, ImageRef] = {}
        texts: dict[str, None] = {}
        pairs: dict[tuple[ImageKey, str], None] = {}
        for refs, example_texts in grids:
            for ref in refs:
                images.setdefault(ref.key, ref)
                for text in example_texts:
                    pairs.setdefault((ref.key, text))
            texts.update(dict.fromkeys(example_texts))
        if self.mode == "dual":
            self._texts([t for t in texts if t not in self._text_vectors])
            self._images(
                [
                    r
                    for k, r in images.items()
                    if k not in self._image_vectors and k not in self.images.unavailable
                ]
            )
            self._cosine_scores(
                [p for p in pairs if p not in self._pair_scores and p[0] in self._image_vectors]
            )
        else:
            self._pairs(images, [p for p in pairs if p not in self._pair_scores])

    def grid(self, grid: Grid, example_id: str) -> np.ndarray | Unscorable:
        """The example's fp32 scores [images, texts], or why its images are unavailable."""
        refs, texts = grid
        if self.mode == "refs":
            pairs = [RefPair(ref, text, example_id) for ref in refs for text in texts]
            self.stats.score_ref_calls += 1
            scores = self._call("score_refs", len(pairs), pairs)
            return scores.reshape(len(refs), len(texts))
        missing = tuple(ref for ref in refs if ref.key in self.images.unavailable)
        if missing:
            return Unscorable(missing, tuple(self.images.unavailable[ref.key] for ref in missing))
        out = np.empty((len(refs), len(texts)), dtype=np.float32)
        for i, ref in enumerate(refs):
            for j, text in enumerate(texts):
                out[i, j] = self._pair_scores[(ref.key, text)]
        return out

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float64 embeddings of ``texts`` (a dual encoder's), each encoded once."""
        self.source.require_dual("encode_texts")
        self._texts([t for t in dict.fromkeys(texts) if t not in self._text_vectors])
        return np.stack([self._text_vectors[t] for t in texts])

    def image_vectors(self, refs: Sequence[ImageRef]) -> np.ndarray | Unscorable:
        """Unit-norm float64 embeddings of ``refs`` (a dual encoder's), each encoded once; or
        which images could not be loaded, and why."""
        self.source.require_dual("encode_images")
        unique = {r.key: r for r in refs if r.key not in self._image_vectors}
        self._images([r for k, r in unique.items() if k not in self.images.unavailable])
        missing = tuple(r for r in refs if r.key in self.images.unavailable)
        if missing:
            return Unscorable(missing, tuple(self.images.unavailable[r.key] for r in missing))
        return np.stack([self._image_vectors[r.key] for r in refs])

    def _call(self, method: str, expected: int, *args: Any) -> np.ndarray:
        """One timed call into the scorer (``ScorerSource.call``)."""
        started = time.perf_counter()
        try:
            return self.source.call(method, expected, *args)
        finally:
            self.stats.model_seconds += time.perf_counter() - started

    def _texts(self, texts: list[str]) -> None:
        """Texts from the cache, the rest encoded in batches (and cached)."""
        keys = {t: text_key(t) for t in texts}
        hits = self.share.common(texts, self._from_cache("text", keys, self._text_vectors))
        self.stats.texts_cached += len(hits)
        batches = list(self._batches([t for t in texts if t not in hits]))
        with self.share.phase("texts", batches, self._text_vectors) as mine:
            for batch in mine:
                self.stats.encode_text_calls += 1
                vectors = self._call("encode_texts", len(batch), batch)
                self._keep("text", batch, keys, vectors, self._text_vectors)
                self.stats.texts_encoded += len(batch)

    def _images(self, refs: list[ImageRef]) -> None:
        """Images from the cache by content key, the rest decoded and encoded (and cached)."""
        self.images.key(refs)
        refs = [r for r in refs if r.key not in self.images.unavailable]
        content = self.images.content_keys
        keys = {r.key: content[r.key] for r in refs if r.key in content}
        hits = self.share.common(list(keys), self._from_cache("image", keys, self._image_vectors))
        self.stats.images_cached += len(hits)
        self._encode_images([r for r in refs if r.key not in hits])

    def _from_cache(self, kind: str, keys: dict[Any, str], into: dict[Any, np.ndarray]) -> set:
        """The items of ``keys`` whose vectors the cache holds, put (unit norm) ``into``."""
        found = self.source.cached(kind, list(keys.values()))
        hits = [item for item, key in keys.items() if _is_row(found.get(key))]
        if hits:
            cached = [found[keys[item]] for item in hits]
            self._width.cached(cached)
            into.update(zip(hits, _normalise(np.stack(cached)), strict=True))
        return set(hits)

    def _keep(
        self, kind: str, items: list[Any], keys: dict[Any, str], vectors: np.ndarray, into: dict
    ) -> None:
        """Vectors the model just computed for ``items``: kept (unit norm) ``into`` and cached
        under the items' keys (an item without one is not cached)."""
        self._width.computed(vectors)
        self.source.stored(
            kind, {keys[i]: v for i, v in zip(items, vectors, strict=True) if i in keys}
        )
        into.update(zip(items, _normalise(vectors), strict=True))

    def _encode_images(self, refs: list[ImageRef]) -> None:
        if not refs:
            return
        scorer = self.source.scorer  # built before the loader pool starts
        preprocess = getattr(scorer, "preprocess_image", None)
        if not (callable(preprocess) and callable(getattr(scorer, "encode_preprocessed", None))):
            preprocess = None
        method = "encode_images" if preprocess is None else "encode_preprocessed"
        todo = list(self._batches(refs))
        with (
            self.share.phase("images", todo, self._image_vectors, self.images.unavailable) as mine,
            tracked(self.spec.name, sum(map(len, mine)), self.progress) as progress,
        ):
            for batch, inputs in self.images.loaded_batches(
                mine, preprocess, self.source.user_code, overlap=not _on_cpu(scorer)
            ):
                if not batch:
                    continue
                self.stats.encode_image_calls += 1
                vectors = self._call(method, len(batch), inputs)
                items = [r.key for r in batch]
                self._keep("image", items, self.images.content_keys, vectors, self._image_vectors)
                self.stats.images_encoded += len(batch)
                if progress is not None:
                    progress.advance(len(batch))

    def _cosine_scores(self, pairs: list[tuple[ImageKey, str]]) -> None:
        if not pairs:
            return
        images = np.stack([self._image_vectors[key] for key, _ in pairs])
        texts = np.stack([self._text_vectors[text] for _, text in pairs])
        scores = cosines(images, texts, self.spec.text)
        self._pair_scores.update(zip(pairs, scores, strict=True))

    def _pairs(self, images: dict[ImageKey, ImageRef], pairs: list[tuple[ImageKey, str]]) -> None:
        """Cross-encoder scores from the cache, the rest scored (and cached)."""
        self.images.key(list({key: images[key] for key, _ in pairs}.values()))
        pairs = [p for p in pairs if p[0] not in self.images.unavailable]
        keys = {
            p: pair_key(self.images.content_keys[p[0]], text_key(p[1]))
            for p in pairs
            if p[0] in self.images.content_keys
        }
        found = self.source.cached("pair", list(keys.values()))
        for pair, key in keys.items():
            row = found.get(key)
            if row is not None and row.shape == (1,):
                self._pair_scores[pair] = np.float32(row[0])
                self.stats.pairs_cached += 1
        self._score_pairs(images, by_image([p for p in pairs if p not in self._pair_scores]), keys)

    def _score_pairs(
        self,
        images: dict[ImageKey, ImageRef],
        pairs: list[tuple[ImageKey, str]],
        keys: dict[tuple[ImageKey, str], str],
    ) -> None:
        """Cross-encoder: batches of unique pairs, each image decoded once per batch."""
        for batch in self._batches(pairs):
            refs = list({key: images[key] for key, _ in batch}.values())
            loaded = dict(zip((r.key for r in refs), self.images.load_all(refs), strict=True))
            batch = [p for p in batch if loaded[p[0]] is not None]
            if not batch:
                continue
            self.stats.score_pair_calls += 1
            scores = self._call(
                "score_pairs",
                len(batch),
                [loaded[key] for key, _ in batch],
                [text for _, text in batch],
            ).reshape(-1)
            self._pair_scores.update(zip(batch, scores, strict=True))
            self.source.stored(
                "pair", {keys[p]: scores[i : i + 1] for i, p in enumerate(batch) if p in keys}
            )
            self.stats.pairs_scored += len(batch)

    def _batches(self, items: Sequence[Any]) -> Iterator[list[Any]]:
        """``items`` in batches of the scorer's own ``batch_size`` (a torch backend's, sized
        to its device) or ``--vl-batch-size``; the scorer is built only if there are items."""
        if not items:
            return
        size = getattr(self.source.scorer, "batch_size", None)
        if not isinstance(size, int) or size < 1:
            size = self.options.batch_size
        for start in range(0, len(items), size):
            yield list(items[start : start + size])


def by_image(pairs: list[tuple[ImageKey, str]]) -> list[tuple[ImageKey, str]]:
    """Pairs grouped by image, images in first-seen order: a batch then holds few unique
    images, and a pair scorer that shares vision features within a batch (``vqa:``) runs
    its vision tower once per unique image."""
    order: dict[ImageKey, int] = {}
    for key, _ in pairs:
        order.setdefault(key, len(order))
    return sorted(pairs, key=lambda pair: order[pair[0]])


def cosines(images: np.ndarray, texts: np.ndarray, model: str) -> np.ndarray:
    """Row-wise dot products of unit image and text rows, as fp32; embeddings of two widths
    cannot share a space, which is the scorer's mistake, said in one line."""
    if images.shape[1] != texts.shape[1]:
        raise ScorerProtocolError(
            f"model '{model}': encode_images gives {images.shape[1]}-d embeddings and "
            f"encode_texts {texts.shape[1]}-d; expected one width (a shared embedding space)"
        )
    return np.einsum("ij,ij->i", images, texts).astype(np.float32)


def text_grid(vectors: np.ndarray) -> np.ndarray:
    """The fp32 cosine similarities [texts, texts] of a text-only example from its unit
    vectors. Each pair is one float64 dot product taken once for both orders, so s(a, b) ==
    s(b, a) bit for bit, and equal texts give equal scores in every example."""
    rows, columns = np.triu_indices(len(vectors))
    values = np.einsum("ij,ij->i", vectors[rows], vectors[columns]).astype(np.float32)
    out = np.empty((len(vectors), len(vectors)), dtype=np.float32)
    out[rows, columns] = values
    out[columns, rows] = values
    return out


def _on_cpu(scorer: Any) -> bool:
    """Whether the scorer says it computes on the CPU (a torch backend's ``device``); one
    that does not say (a ``py:`` scorer) may use an accelerator, and images are prepared
    beside its forward passes as before."""
    return str(getattr(scorer, "device", "")).split(":")[0] == "cpu"


def _is_row(vector: np.ndarray | None) -> bool:
    """A cached embedding that is usable: one row of finite values."""
    return vector is not None and vector.ndim == 1 and bool(np.isfinite(vector).all())


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float64 (a zero row stays zero and scores 0)."""
    rows = vectors.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)
