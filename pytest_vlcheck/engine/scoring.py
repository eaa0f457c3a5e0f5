"""Score every unique image and text once per model, in batches, and remember the scores.

A ``ModelRunner`` owns one model for a session (or one xdist worker). ``prepare(tests)``
encodes, in batches of ``batch_size``, every image and text those tests need that has not
been encoded yet, then computes each unique (image, text) score once; ``grid(example)``
reads an example's scores from that cache, so equal inputs give bit-identical scores.
Dual-encoder scores are cosine similarities: embeddings are normalised and multiplied in
float64 and the score rounded to fp32, on which every decision is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pytest_vlcheck.errors import ScorerProtocolError, UserCodeError, VlcheckUserError
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.models.protocol import (
    DualEncoder,
    ModelOptions,
    RefPair,
    RefScorer,
    check_rows,
    scorer_fingerprint,
)
from pytest_vlcheck.models.registry import BUILTIN_BACKENDS, ModelSpec, load_scorer
from pytest_vlcheck.tasks import Grid, get_task

if TYPE_CHECKING:
    from PIL.Image import Image

    from pytest_vlcheck.checklist.schema import ChecklistTest

ImageKey = tuple[Any, ...]
ImageLoad = Callable[[ImageRef], "Image"]
LOAD_THREADS = 8
ScoringMode = Literal["refs", "dual", "pairs"]


@dataclass(frozen=True)
class Unscorable:
    """An example whose images could not be loaded: which, and why (it gets no scores)."""

    refs: tuple[ImageRef, ...]
    reasons: tuple[str, ...]


@dataclass
class ScoringStats:
    """What the model was asked to do, for benchmarks and the terminal summary."""

    encode_image_calls: int = 0
    encode_text_calls: int = 0
    score_pair_calls: int = 0
    score_ref_calls: int = 0
    images_encoded: int = 0
    texts_encoded: int = 0
    pairs_scored: int = 0
    model_seconds: float = 0.0
    load_seconds: float = 0.0

    @property
    def model_calls(self) -> int:
        """All calls into the scorer."""
        return (
            self.encode_image_calls
            + self.encode_text_calls
            + self.score_pair_calls
            + self.score_ref_calls
        )


@dataclass
class ModelRunner:
    """One model's scorer, loaded on first use, with the session's score caches."""

    spec: ModelSpec
    options: ModelOptions
    load_image: ImageLoad
    stats: ScoringStats = field(default_factory=ScoringStats)
    _scorer: Any = None
    _mode: ScoringMode | None = None
    _load_error: Exception | None = None
    _image_vectors: dict[ImageKey, np.ndarray] = field(default_factory=dict)
    _text_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _pair_scores: dict[tuple[ImageKey, str], np.float32] = field(default_factory=dict)
    unavailable: dict[ImageKey, str] = field(default_factory=dict)

    @property
    def scorer(self) -> Any:
        """The scorer, loaded once; a load failure is remembered and raised again.

        The scoring path is chosen here, once: reference lookups (no pixels), the dual
        encoder (each unique input encoded once, cosine scores), or the pair scorer.
        """
        if self._load_error is not None:
            raise self._load_error
        if self._scorer is None:
            try:
                self._scorer = load_scorer(self.spec, self.options)
            except Exception as exc:
                self._load_error = exc
                raise
        if self._mode is None:
            self._mode = _scoring_mode(self._scorer)
        return self._scorer

    @property
    def mode(self) -> ScoringMode:
        """How this model scores (loads the model on first use)."""
        _ = self.scorer
        assert self._mode is not None
        return self._mode

    @property
    def fingerprint(self) -> str:
        """The loaded weights' fingerprint."""
        return scorer_fingerprint(self.scorer)

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
            self._encode_texts([t for t in texts if t not in self._text_vectors])
            self._encode_images(
                [
                    r
                    for k, r in images.items()
                    if k not in self._image_vectors and k not in self.unavailable
                ]
            )
            self._cosine_scores(
                [p for p in pairs if p not in self._pair_scores and p[0] in self._image_vectors]
            )
        else:
            self._score_pairs(
                images,
                [p for p in pairs if p not in self._pair_scores and p[0] not in self.unavailable],
            )

    def grid(self, grid: Grid, example_id: str) -> np.ndarray | Unscorable:
        """The example's fp32 scores [images, texts], or why its images are unavailable."""
        refs, texts = grid
        if self.mode == "refs":
            pairs = [RefPair(ref, text, example_id) for ref in refs for text in texts]
            self.stats.score_ref_calls += 1
            scores = self._call("score_refs", len(pairs), pairs)
            return scores.reshape(len(refs), len(texts))
        missing = tuple(ref for ref in refs if ref.key in self.unavailable)
        if missing:
            return Unscorable(missing, tuple(self.unavailable[ref.key] for ref in missing))
        out = np.empty((len(refs), len(texts)), dtype=np.float32)
        for i, ref in enumerate(refs):
            for j, text in enumerate(texts):
                out[i, j] = self._pair_scores[(ref.key, text)]
        return out

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float64 embeddings of ``texts`` (a dual encoder's), each encoded once."""
        self._require_dual("encode_texts")
        self._encode_texts([t for t in dict.fromkeys(texts) if t not in self._text_vectors])
        return np.stack([self._text_vectors[t] for t in texts])

    def image_vectors(self, refs: Sequence[ImageRef]) -> np.ndarray | Unscorable:
        """Unit-norm float64 embeddings of ``refs`` (a dual encoder's), each encoded once; or
        which images could not be loaded, and why."""
        self._require_dual("encode_images")
        unique = {r.key: r for r in refs if r.key not in self._image_vectors}
        self._encode_images([r for k, r in unique.items() if k not in self.unavailable])
        missing = tuple(r for r in refs if r.key in self.unavailable)
        if missing:
            return Unscorable(missing, tuple(self.unavailable[r.key] for r in missing))
        return np.stack([self._image_vectors[r.key] for r in refs])

    def _require_dual(self, method: str) -> None:
        if self.mode != "dual":
            kind = "scores pairs only (score_pairs)" if self.mode == "pairs" else "looks scores up"
            raise ScorerProtocolError(
                f"model '{self.spec.text}' {kind}: {method} needs a dual encoder (encode_images "
                "and encode_texts); use score(images, texts) instead"
            )

    def match_scores(self, scores: np.ndarray) -> tuple[np.ndarray, str]:
        """Scores for a ``match`` decision and their kind (``probability`` or ``similarity``).

        Dual encoders that define ``match_probability`` (SigLIP's sigmoid) map similarities
        to probabilities; cross-encoders and score files give their scores as they are.
        """
        if self.mode != "dual":
            return scores, "probability"
        if hasattr(self.scorer, "match_probability"):
            probabilities = self.scorer.match_probability(scores)
            return np.asarray(probabilities, dtype=np.float32), "probability"
        return scores, "similarity"

    def _call(self, method: str, expected: int, *args: Any) -> np.ndarray:
        """One timed call into the scorer, its result checked against the protocol.

        An exception from the user's own scorer (``py:`` or an entry point) becomes a
        ``UserCodeError`` with their frames only; one from a built-in backend is a bug in
        vlcheck and keeps its full traceback.
        """
        started = time.perf_counter()
        try:
            result = _to_numpy(getattr(self.scorer, method)(*args))
        except VlcheckUserError:
            raise
        except Exception as exc:
            if self.spec.scheme in BUILTIN_BACKENDS:
                raise
            raise UserCodeError.from_exception(exc, f"model '{self.spec.text}': {method}") from exc
        finally:
            self.stats.model_seconds += time.perf_counter() - started
        check_rows(result, expected, method, self.spec.text)
        return result

    def _encode_texts(self, texts: list[str]) -> None:
        for batch in _batches(texts, self.options.batch_size):
            self.stats.encode_text_calls += 1
            vectors = self._call("encode_texts", len(batch), batch)
            for text, vector in zip(batch, _normalise(vectors), strict=True):
                self._text_vectors[text] = vector
            self.stats.texts_encoded += len(batch)

    def _encode_images(self, refs: list[ImageRef]) -> None:
        for batch, images in self._loaded_batches(refs):
            if not batch:
                continue
            self.stats.encode_image_calls += 1
            vectors = self._call("encode_images", len(batch), images)
            for ref, vector in zip(batch, _normalise(vectors), strict=True):
                self._image_vectors[ref.key] = vector
            self.stats.images_encoded += len(batch)

    def _cosine_scores(self, pairs: list[tuple[ImageKey, str]]) -> None:
        if not pairs:
            return
        image_matrix = np.stack([self._image_vectors[key] for key, _ in pairs])
        text_matrix = np.stack([self._text_vectors[text] for _, text in pairs])
        scores = np.einsum("ij,ij->i", image_matrix, text_matrix).astype(np.float32)
        self._pair_scores.update(zip(pairs, scores, strict=True))

    def _score_pairs(
        self, images: dict[ImageKey, ImageRef], pairs: list[tuple[ImageKey, str]]
    ) -> None:
        """Cross-encoder: batches of unique pairs, each image decoded once per batch."""
        for batch in _batches(pairs, self.options.batch_size):
            refs = list({key: images[key] for key, _ in batch}.values())
            loaded = dict(zip((r.key for r in refs), self._load_all(refs), strict=True))
            batch = [p for p in batch if loaded[p[0]] is not None]
            if not batch:
                continue
            self.stats.score_pair_calls += 1
            scores = self._call(
                "score_pairs",
                len(batch),
                [loaded[key] for key, _ in batch],
                [text for _, text in batch],
            )
            self._pair_scores.update(zip(batch, scores.astype(np.float32).reshape(-1), strict=True))
            self.stats.pairs_scored += len(batch)

    def _loaded_batches(self, refs: list[ImageRef]) -> Iterator[tuple[list[ImageRef], list[Image]]]:
        """Batches of decoded images; the next batch decodes while the model runs."""
        batches = list(_batches(refs, self.options.batch_size))
        with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
            pending = [[pool.submit(self._load_one, ref) for ref in batch] for batch in batches[:1]]
            for index, batch in enumerate(batches):
                if index + 1 < len(batches):
                    pending.append([pool.submit(self._load_one, ref) for ref in batches[index + 1]])
                started = time.perf_counter()
                images = [future.result() for future in pending[index]]
                self.stats.load_seconds += time.perf_counter() - started
                kept = [(r, im) for r, im in zip(batch, images, strict=True) if im is not None]
                yield [r for r, _ in kept], [im for _, im in kept]

    def _load_all(self, refs: Sequence[ImageRef]) -> list[Image | None]:
        """Decode ``refs`` in parallel; failures are recorded, not raised."""
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
            results = list(pool.map(self._load_one, refs))
        self.stats.load_seconds += time.perf_counter() - started
        return results

    def _load_one(self, ref: ImageRef) -> Image | None:
        try:
            return self.load_image(ref)
        except ImageUnavailable as exc:
            self.unavailable[ref.key] = exc.reason
            return None


def _scoring_mode(scorer: Any) -> ScoringMode:
    """Reference lookups when the scorer has them, else the dual encoder, else pairs."""
    if isinstance(scorer, RefScorer):
        return "refs"
    return "dual" if isinstance(scorer, DualEncoder) else "pairs"


def _batches(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), max(1, size)):
        yield list(items[start : start + size])


def _to_numpy(value: Any) -> np.ndarray:
    """Arrays from numpy, torch (any device) or lists, as float32 numpy."""
    if hasattr(value, "detach"):
        value = value.detach().float().cpu().numpy()
    return np.asarray(value, dtype=np.float32)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float64 (a zero row stays zero and scores 0)."""
    rows = vectors.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)
