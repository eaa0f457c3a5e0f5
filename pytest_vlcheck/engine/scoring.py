"""Score every unique image and text once per model, in batches, and remember the scores.

A ``ModelRunner`` owns one model for a session (or one xdist worker). ``prepare(tests)``
encodes, in batches of ``batch_size``, every image and text those tests need that has not
been encoded yet, then computes each unique (image, text) score once; ``grid(example)``
reads an example's scores from that cache, so equal inputs give bit-identical scores.
Dual-encoder scores are cosine similarities: embeddings are normalised and multiplied in
float64 and the score rounded to fp32, on which every decision is made.

With an ``EmbeddingCache``, raw fp32 embeddings (and cross-encoder pair scores) are kept on
disk under a namespace naming the model's identity, preprocessing and precision, and keyed
by content (``content_keys``). The model is built only when something is missing: its
identity comes from the backend's ``identify`` (no torch), and how it scores (dual encoder or
pairs, and a SigLIP-style calibration) from the cache's ``meta`` row written when it was
last built. Images are decoded, and preprocessed when the scorer exposes
``preprocess_image`` + ``encode_preprocessed``, in a thread pool while the model runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pytest_vlcheck.engine.content_keys import image_key, namespace, pair_key, text_key
from pytest_vlcheck.engine.progress import Writer, tracked
from pytest_vlcheck.errors import (
    ModelLoadError,
    ScorerProtocolError,
    UserCodeError,
    VlcheckUserError,
)
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.models.protocol import (
    DualEncoder,
    ModelIdentity,
    ModelOptions,
    RefPair,
    RefScorer,
    check_rows,
    scorer_fingerprint,
)
from pytest_vlcheck.models.registry import (
    BUILTIN_BACKENDS,
    ModelSpec,
    identify,
    load_scorer,
    run_precision,
)
from pytest_vlcheck.models.torch_utils import calibrated_sigmoid
from pytest_vlcheck.tasks import Grid, get_task

if TYPE_CHECKING:
    from PIL.Image import Image

    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine.embedding_cache import EmbeddingCache

ImageKey = tuple[Any, ...]
ImageLoad = Callable[[ImageRef], "Image"]
LOAD_THREADS = 8
ScoringMode = Literal["refs", "dual", "pairs"]
CACHED_MODES = ("dual", "pairs")


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
    images_cached: int = 0
    texts_cached: int = 0
    pairs_cached: int = 0
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

    @property
    def cached(self) -> int:
        """Inputs (images, texts, pairs) read from the embedding cache instead of the model."""
        return self.images_cached + self.texts_cached + self.pairs_cached


@dataclass(frozen=True)
class KnownModel:
    """What the cache remembers of a model, so a fully cached run need not build it."""

    mode: ScoringMode
    sigmoid: tuple[float, float] | None = None
    own_match: bool = False
    """The scorer has a ``match_probability`` of its own (not a plain calibrated sigmoid)."""

    def to_json(self) -> str:
        """The meta row's text."""
        return json.dumps({"mode": self.mode, "sigmoid": self.sigmoid, "own_match": self.own_match})

    @staticmethod
    def from_json(text: str | None) -> KnownModel | None:
        """The meta row read back; anything unexpected is None (the model is built)."""
        try:
            data = json.loads(text or "")
            sigmoid = data["sigmoid"]
            if data["mode"] not in CACHED_MODES or not isinstance(data["own_match"], bool):
                return None
            if sigmoid is not None:
                scale, bias = (float(v) for v in sigmoid)
                sigmoid = (scale, bias)
            return KnownModel(data["mode"], sigmoid, data["own_match"])
        except (ValueError, TypeError, KeyError):
            return None

    @staticmethod
    def of(scorer: Any, mode: ScoringMode) -> KnownModel:
        """What to remember of a built scorer."""
        calibration = getattr(scorer, "sigmoid_calibration", None)
        if calibration is not None:
            return KnownModel(mode, (float(calibration[0]), float(calibration[1])))
        return KnownModel(mode, None, hasattr(scorer, "match_probability"))


@dataclass
class ModelRunner:
    """One model's scorer, built on first need, with the session's score caches.

    ``cache`` is the on-disk embedding cache (None: everything is encoded); ``progress``
    draws a progress line while images are encoded (None: silent).
    """

    spec: ModelSpec
    options: ModelOptions
    load_image: ImageLoad
    cache: EmbeddingCache | None = None
    progress: Writer | None = None
    stats: ScoringStats = field(default_factory=ScoringStats)
    _scorer: Any = None
    _mode: ScoringMode | None = None
    _known: KnownModel | None = None
    _load_error: Exception | None = None
    _identity: ModelIdentity | None = None
    _identified: bool = False
    _precision: str | None = None
    """The precision the model computes in (fp16 on the CPU is fp32): part of the namespace."""
    _image_vectors: dict[ImageKey, np.ndarray] = field(default_factory=dict)
    _text_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _pair_scores: dict[tuple[ImageKey, str], np.float32] = field(default_factory=dict)
    _content_keys: dict[ImageKey, str] = field(default_factory=dict)
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
                self._scorer = self._same_identity(load_scorer(self.spec, self.options))
            except Exception as exc:
                self._load_error = exc
                raise
        if self._mode is None:
            self._mode = _scoring_mode(self._scorer)
            self._remember_model()
        return self._scorer

    def _same_identity(self, scorer: Any) -> Any:
        """``scorer``, if it is the model the cache namespace was named after before it was
        built: otherwise vectors of two weights would be mixed under one name (a hub model
        updated while loading, a ``py:`` factory declaring another fingerprint)."""
        identity = self._identity if self._identified else None
        built = scorer_fingerprint(scorer)
        if identity is not None and built and built != identity.fingerprint:
            raise ModelLoadError(
                f"model '{self.spec.text}': its fingerprint was {identity.fingerprint} before "
                f"loading and the loaded model's is {built}; expected one fingerprint (a "
                "py: factory's vlcheck_fingerprint must equal its scorer's fingerprint; hub "
                "weights updated while loading are read again by a new run)"
            )
        return scorer

    @property
    def mode(self) -> ScoringMode:
        """How this model scores: from the cache's memory of it, else by building it."""
        if self._mode is None:
            known = self._known_model()
            self._mode = known.mode if known is not None else None
        if self._mode is None:
            _ = self.scorer
        assert self._mode is not None
        return self._mode

    @property
    def fingerprint(self) -> str:
        """The weights' fingerprint: the identity's when known (no model needed)."""
        identity = self._identity if self._identified else None
        return identity.fingerprint if identity else scorer_fingerprint(self.scorer)

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
                    if k not in self._image_vectors and k not in self.unavailable
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
        self._texts([t for t in dict.fromkeys(texts) if t not in self._text_vectors])
        return np.stack([self._text_vectors[t] for t in texts])

    def image_vectors(self, refs: Sequence[ImageRef]) -> np.ndarray | Unscorable:
        """Unit-norm float64 embeddings of ``refs`` (a dual encoder's), each encoded once; or
        which images could not be loaded, and why."""
        self._require_dual("encode_images")
        unique = {r.key: r for r in refs if r.key not in self._image_vectors}
        self._images([r for k, r in unique.items() if k not in self.unavailable])
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
        known = self._known if self._scorer is None else None
        if known is not None and known.sigmoid is not None:
            return calibrated_sigmoid(scores, *known.sigmoid), "probability"
        if (known is None or known.own_match) and hasattr(self.scorer, "match_probability"):
            probabilities = self.scorer.match_probability(scores)
            return np.asarray(probabilities, dtype=np.float32), "probability"
        return scores, "similarity"

    def _namespace(self, kind: str) -> str | None:
        """The cache namespace of ``kind`` for this model, or None when it cannot be cached:
        no cache, or a model without an identity that is not built yet."""
        if self.cache is None or not self.cache.enabled:
            return None
        if not self._identified:
            self._identified = True
            self._identity = identify(self.spec, self.options, self.cache.file_digest)
        identity = self._identity
        if identity is None and self._scorer is not None:
            fingerprint = scorer_fingerprint(self._scorer)
            # Without a backend identity, the spec as written stands for the preprocessing.
            identity = ModelIdentity(fingerprint, f"spec {self.spec.text}") if fingerprint else None
        if identity is None:
            return None
        if self._precision is None:
            self._precision = run_precision(self.spec.scheme, self.options)
        preprocessing = f"{identity.preprocessing}|{self._precision}"
        return namespace(identity.fingerprint, preprocessing, kind)

    def _known_model(self) -> KnownModel | None:
        space = self._namespace("meta")
        if space is None or self.cache is None:
            return None
        self._known = KnownModel.from_json(self.cache.get_meta(space))
        return self._known

    def _remember_model(self) -> None:
        space = self._namespace("meta")
        if space is not None and self.cache is not None and self._mode in CACHED_MODES:
            assert self._mode is not None
            self.cache.put_meta(space, KnownModel.of(self._scorer, self._mode).to_json())

    def _call(self, method: str, expected: int, *args: Any) -> np.ndarray:
        """One timed call into the scorer, its result checked against the protocol."""
        started = time.perf_counter()
        try:
            raw = self._user_code(method, getattr(self.scorer, method), *args)
        finally:
            self.stats.model_seconds += time.perf_counter() - started
        try:
            result = _to_numpy(raw)
        except (TypeError, ValueError) as exc:
            raise ScorerProtocolError(
                f"model '{self.spec.text}': {method} returned {type(raw).__name__}, not "
                f"numbers ({exc}); expected a numpy array, torch tensor or list of numbers"
            ) from None
        check_rows(result, expected, method, self.spec.text)
        return result

    def _user_code(self, method: str, function: Callable[..., Any], *args: Any) -> Any:
        """Call a scorer method. An exception from the user's own scorer (``py:`` or an entry
        point) becomes a ``UserCodeError`` with their frames only; one from a built-in
        backend is a bug in vlcheck and keeps its full traceback."""
        try:
            return function(*args)
        except VlcheckUserError:
            raise
        except Exception as exc:
            if self.spec.scheme in BUILTIN_BACKENDS:
                raise
            raise UserCodeError.from_exception(exc, f"model '{self.spec.text}': {method}") from exc

    def _store(self, kind: str, items: dict[str, np.ndarray]) -> None:
        space = self._namespace(kind)
        if space is not None and self.cache is not None:
            self.cache.put_many(space, items)

    def _lookup(self, kind: str, keys: list[str]) -> dict[str, np.ndarray]:
        space = self._namespace(kind) if keys else None
        if space is None or self.cache is None:
            return {}
        return self.cache.get_many(space, keys)

    def _texts(self, texts: list[str]) -> None:
        """Texts from the cache, the rest encoded in batches (and cached)."""
        keys = {t: text_key(t) for t in texts}
        found = self._lookup("text", list(keys.values()))
        hits = [t for t in texts if _is_row(found.get(keys[t]))]
        if hits:
            rows = _normalise(np.stack([found[keys[t]] for t in hits]))
            self._text_vectors.update(zip(hits, rows, strict=True))
            self.stats.texts_cached += len(hits)
        hit_set = set(hits)
        for batch in self._batches([t for t in texts if t not in hit_set]):
            self.stats.encode_text_calls += 1
            vectors = self._call("encode_texts", len(batch), batch)
            self._store("text", {keys[t]: v for t, v in zip(batch, vectors, strict=True)})
            self._text_vectors.update(zip(batch, _normalise(vectors), strict=True))
            self.stats.texts_encoded += len(batch)

    def _images(self, refs: list[ImageRef]) -> None:
        """Images from the cache by content key, the rest decoded and encoded (and cached)."""
        self._image_keys(refs)
        refs = [r for r in refs if r.key not in self.unavailable]
        keyed = [r for r in refs if r.key in self._content_keys]
        found = self._lookup("image", [self._content_keys[r.key] for r in keyed])
        hits = [r for r in keyed if _is_row(found.get(self._content_keys[r.key]))]
        if hits:
            rows = _normalise(np.stack([found[self._content_keys[r.key]] for r in hits]))
            self._image_vectors.update(zip((r.key for r in hits), rows, strict=True))
            self.stats.images_cached += len(hits)
        hit_set = {r.key for r in hits}
        self._encode_images([r for r in refs if r.key not in hit_set])

    def _encode_images(self, refs: list[ImageRef]) -> None:
        if not refs:
            return
        scorer = self.scorer  # built before the loader pool starts
        preprocess = getattr(scorer, "preprocess_image", None)
        if not (callable(preprocess) and callable(getattr(scorer, "encode_preprocessed", None))):
            preprocess = None
        method = "encode_images" if preprocess is None else "encode_preprocessed"
        with tracked(self.spec.name, len(refs), self.progress) as progress:
            for batch, inputs in self._loaded_batches(refs, preprocess):
                if not batch:
                    continue
                self.stats.encode_image_calls += 1
                vectors = self._call(method, len(batch), inputs)
                self._store(
                    "image",
                    {
                        self._content_keys[r.key]: v
                        for r, v in zip(batch, vectors, strict=True)
                        if r.key in self._content_keys
                    },
                )
                self._image_vectors.update(
                    zip((r.key for r in batch), _normalise(vectors), strict=True)
                )
                self.stats.images_encoded += len(batch)
                if progress is not None:
                    progress.advance(len(batch))

    def _image_keys(self, refs: Sequence[ImageRef]) -> None:
        """Content keys of ``refs`` when the cache is on: file images hashed in parallel, with
        one stat-index query and one index write for all of them."""
        if self.cache is None or not self.cache.enabled:
            return
        todo = [
            r for r in refs if r.key not in self._content_keys and r.key not in self.unavailable
        ]
        files = list(dict.fromkeys(Path(r.location) for r in todo if r.kind == "file"))
        with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
            digests = dict(zip(files, self.cache.file_digests(files, pool.map), strict=True))

        def digest(path: Path) -> str:
            found = digests[path]
            if isinstance(found, str):
                return found
            raise found

        for ref in todo:
            try:
                self._content_keys[ref.key] = image_key(ref, digest)
            except ImageUnavailable:
                self._load_one(ref)  # records the loader's own reason, as an uncached run would

    def _cosine_scores(self, pairs: list[tuple[ImageKey, str]]) -> None:
        if not pairs:
            return
        image_matrix = np.stack([self._image_vectors[key] for key, _ in pairs])
        text_matrix = np.stack([self._text_vectors[text] for _, text in pairs])
        scores = np.einsum("ij,ij->i", image_matrix, text_matrix).astype(np.float32)
        self._pair_scores.update(zip(pairs, scores, strict=True))

    def _pairs(self, images: dict[ImageKey, ImageRef], pairs: list[tuple[ImageKey, str]]) -> None:
        """Cross-encoder scores from the cache, the rest scored (and cached)."""
        self._image_keys(list({key: images[key] for key, _ in pairs}.values()))
        pairs = [p for p in pairs if p[0] not in self.unavailable]
        keys = {
            p: pair_key(self._content_keys[p[0]], text_key(p[1]))
            for p in pairs
            if p[0] in self._content_keys
        }
        found = self._lookup("pair", list(keys.values()))
        for pair, key in keys.items():
            row = found.get(key)
            if row is not None and row.shape == (1,):
                self._pair_scores[pair] = np.float32(row[0])
                self.stats.pairs_cached += 1
        self._score_pairs(images, [p for p in pairs if p not in self._pair_scores], keys)

    def _score_pairs(
        self,
        images: dict[ImageKey, ImageRef],
        pairs: list[tuple[ImageKey, str]],
        keys: dict[tuple[ImageKey, str], str],
    ) -> None:
        """Cross-encoder: batches of unique pairs, each image decoded once per batch."""
        for batch in self._batches(pairs):
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
            ).reshape(-1)
            self._pair_scores.update(zip(batch, scores, strict=True))
            self._store(
                "pair", {keys[p]: scores[i : i + 1] for i, p in enumerate(batch) if p in keys}
            )
            self.stats.pairs_scored += len(batch)

    def _loaded_batches(
        self, refs: list[ImageRef], preprocess: Callable[[Image], Any] | None
    ) -> Iterator[tuple[list[ImageRef], list[Any]]]:
        """Batches of decoded (and, with ``preprocess``, preprocessed) images; the next
        batches are prepared in the pool while the model runs."""
        batches = list(self._batches(refs))

        def prepare(ref: ImageRef) -> Any:
            image = self._load_one(ref)
            if image is None or preprocess is None:
                return image
            return self._user_code("preprocess_image", preprocess, image)

        with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
            ahead = 2  # batches in flight beyond the one being encoded
            pending = [[pool.submit(prepare, ref) for ref in batch] for batch in batches[:ahead]]
            for index, batch in enumerate(batches):
                if index + ahead < len(batches):
                    pending.append([pool.submit(prepare, ref) for ref in batches[index + ahead]])
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

    def _batches(self, items: Sequence[Any]) -> Iterator[list[Any]]:
        """``items`` in batches of the scorer's own ``batch_size`` (a torch backend's, sized
        to its device) or ``--vl-batch-size``; the scorer is built only if there are items."""
        if not items:
            return
        size = getattr(self.scorer, "batch_size", None)
        if not isinstance(size, int) or size < 1:
            size = self.options.batch_size
        for start in range(0, len(items), size):
            yield list(items[start : start + size])

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


def _is_row(vector: np.ndarray | None) -> bool:
    """A cached embedding that is usable: one row of finite values."""
    return vector is not None and vector.ndim == 1 and bool(np.isfinite(vector).all())


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
