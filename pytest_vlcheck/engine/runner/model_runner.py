"""Plan the unique inputs a set of tests needs and score them in batches, once per model.

A ``ModelRunner`` owns one model for a session (or one xdist worker, or a live model object
across a training loop's calls). It plans and batches, nothing else: ``prepare(tests)``
gathers every unique image, text and (image, text) pair those tests need (``plan``, one
deterministic step: the seam where a collective run keeps a rank's share), cuts what is
still to compute into batches of the scorer's ``batch_size`` and hands them to its
``CachedScorer``, which keeps every result in memory and in the embedding cache and calls
the model for the misses; ``grid(example)`` reads an example's scores from that memory, so
equal inputs give bit-identical scores. Dual-encoder scores are cosine similarities:
embeddings are normalised and multiplied in float64 and the score rounded to fp32, on which
every decision is made. Images are decoded, and preprocessed when the scorer exposes
``preprocess_image`` + ``encode_preprocessed``, by the ``ImageFeed`` in a thread pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_vlcheck.engine.feed.on_device import DeviceDecode
from pytest_vlcheck.engine.feed.pipeline import ImageFeed, ImageLoad
from pytest_vlcheck.engine.feed.store import ImageStore
from pytest_vlcheck.engine.runner.asking import answer_asks, asking_requests
from pytest_vlcheck.engine.runner.batch_share import BatchShare, WholeShare
from pytest_vlcheck.engine.runner.progress import Writer, tracked
from pytest_vlcheck.engine.runner.stats import ScoringStats
from pytest_vlcheck.engine.scores.cached_scorer import CachedScorer, Pair, cosines
from pytest_vlcheck.engine.scores.embedding_width import EmbeddingWidth
from pytest_vlcheck.engine.scores.pixel_cache import transform_namespace
from pytest_vlcheck.engine.scores.scorer_source import ScorerSource, ScoringMode
from pytest_vlcheck.images.refs import ImageKey, ImageRef
from pytest_vlcheck.models.generative.protocol import is_generative
from pytest_vlcheck.models.protocol import ModelOptions, RefPair, Scorer
from pytest_vlcheck.models.registry import ModelSpec
from pytest_vlcheck.tasks import Grid, get_task
from pytest_vlcheck.tasks.asking import AskKey, Reply, asks_model

if TYPE_CHECKING:
    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

__all__ = ["ModelRunner", "Plan", "ScoringStats", "Unscorable", "cosines", "text_grid"]


@dataclass(frozen=True)
class Unscorable:
    """An example whose images could not be loaded: which, and why (it gets no scores)."""

    refs: tuple[ImageRef, ...]
    reasons: tuple[str, ...]


@dataclass
class Plan:
    """The unique inputs of a set of grids, in first-seen order (deterministic: the same
    grids give the same plan in every process)."""

    images: dict[ImageKey, ImageRef] = field(default_factory=dict)
    texts: dict[str, None] = field(default_factory=dict)
    pairs: dict[Pair, None] = field(default_factory=dict)

    @classmethod
    def of(cls, grids: Iterable[Grid]) -> Plan:
        plan = cls()
        for refs, example_texts in grids:
            for ref in refs:
                plan.images.setdefault(ref.key, ref)
                for text in example_texts:
                    plan.pairs.setdefault((ref.key, text))
            plan.texts.update(dict.fromkeys(example_texts))
        return plan


@dataclass
class ModelRunner:
    """One model's scores: plans each unique input, batches it, and serves example grids.
    The scorer comes from a ``ScorerSource`` behind a ``CachedScorer`` (memory and the
    embedding cache); what was computed is forgotten when the weights change (``refresh``).

    ``cache`` is the on-disk embedding cache (None: everything is encoded); ``progress``
    draws a progress line while images are encoded (None: silent).
    """

    spec: ModelSpec
    options: ModelOptions
    load_image: ImageLoad
    cache: EmbeddingCache | None = None
    progress: Writer | None = None
    stats: ScoringStats = field(default_factory=ScoringStats)
    scores: CachedScorer = field(init=False, repr=False)
    images: ImageFeed = field(init=False, repr=False)
    _device: DeviceDecode | bool | None = field(default=None, init=False, repr=False)
    """``--vl-decode gpu``'s path, once known (False: this model's preprocessing has none)."""
    share: BatchShare = field(default_factory=WholeShare, repr=False)
    """Which of the planned batches this process encodes (``engine.runner.batch_share``)."""
    replies: dict[AskKey, Reply] = field(default_factory=dict, repr=False)
    """A generative model's replies by request (``engine.runner.asking``), kept for one call."""

    def __post_init__(self) -> None:
        cache_file = None if self.cache is None else self.cache.path
        self.scores = CachedScorer(
            ScorerSource(self.spec, self.options, self.cache),
            self.stats,
            EmbeddingWidth(self.spec.text, cache_file),
        )
        self.images = ImageFeed(self.load_image, self.cache, self.stats)

    @classmethod
    def for_scorer(
        cls,
        spec: ModelSpec,
        scorer: Scorer,
        options: ModelOptions,
        load_image: ImageLoad,
        progress: Writer | None = None,
        cache: EmbeddingCache | None = None,
        image_memory: int = 0,
    ) -> ModelRunner:
        """A runner over a scorer built already (a live model, an object given to
        ``evaluate``): never rebuilt; its vectors go to a disk cache only when one is given
        (a benchmark handing a spec-built model a fresh cache); ``image_memory`` bytes of
        preprocessed images are kept across calls (``ImageStore``)."""
        runner = cls(spec, options, load_image, cache, progress)
        runner.scores.source = ScorerSource(spec, options, cache, scorer)
        runner.images.store = ImageStore(image_memory)
        runner.images.store.bind(getattr(scorer, "identity", None))
        return runner

    @property
    def source(self) -> ScorerSource:
        """Where the scorer comes from and who it is."""
        return self.scores.source

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

    @property
    def score_kind(self) -> str:
        """What the model's raw scores are (``ScorerSource.score_kind``)."""
        return self.source.score_kind

    def rebind(self, scorer: Scorer) -> None:
        """The same model wrapped anew for another call (``run.live_runners``): what was
        computed stays while its fingerprint holds (``refresh``), preprocessed images while
        its ``identity`` (a live scorer's architecture, preprocessing and precision) holds; the
        stats start again."""
        self.images.store.bind(getattr(scorer, "identity", None))
        self.scores.source = ScorerSource(self.spec, self.options, self.cache, scorer)
        self.stats = self.scores.stats = self.images.stats = ScoringStats()
        self.replies.clear()

    def release(self) -> None:
        """Let go of the scorer between a live model's calls: the registry holds runners
        weakly by model object, and a runner holding the model through its scorer would keep
        both alive for ever. What was computed stays (``rebind`` gives the next call's)."""
        self.scores.source = ScorerSource(self.spec, self.options, self.cache)

    def refresh(self) -> None:
        """Start a new call from the user (``vl_model.score``, a training loop's probe):
        numbers belong to the weights at call time (``CachedScorer.refresh``); a file image
        changed since is read anew."""
        self.scores.refresh(self.images.changed_files())
        self.replies.clear()

    def prepare(self, tests: Iterable[ChecklistTest]) -> None:
        """Score, in batches, everything ``tests`` need that is not cached yet (a generative
        model's replies too, when it is one: ``engine.runner.asking``)."""
        tests = list(tests)
        asking = [t for t in tests if asks_model(get_task(t.task), t.settings)]
        self.prepare_grids(
            get_task(t.task).grid(e)
            for t in tests
            if not any(t is a for a in asking)
            for e in t.examples
        )
        if asking and is_generative(self.source.scorer):
            answer_asks(self, asking_requests(asking))

    def prepare_grids(self, grids: Iterable[Grid]) -> None:
        """Score, in batches, every (image, text) pair of ``grids`` not cached yet (also for
        grids that belong to no checklist test: the ``vl_model`` fixture's ``score``)."""
        if self.mode == "refs":
            return  # reference lookups are cheap and per example: done in ``grid``
        plan = Plan.of(grids)
        memory = self.scores.memory
        if self.mode == "dual":
            self._texts([t for t in plan.texts if t not in memory.texts])
            unavailable = self.images.unavailable
            self._images(
                [
                    r
                    for k, r in plan.images.items()
                    if k not in memory.images and k not in unavailable
                ]
            )
            todo = [p for p in plan.pairs if p not in memory.pairs and p[0] in memory.images]
            self.scores.cosine_scores(todo, self.spec.text)
        else:
            self._pairs(plan.images, [p for p in plan.pairs if p not in memory.pairs])

    def grid(self, grid: Grid, example_id: str) -> np.ndarray | Unscorable:
        """The example's fp32 scores [images, texts], or why its images are unavailable."""
        refs, texts = grid
        if self.mode == "refs":
            pairs = [RefPair(ref, text, example_id) for ref in refs for text in texts]
            self.stats.score_ref_calls += 1
            scores = self.scores.call("score_refs", len(pairs), pairs)
            return scores.reshape(len(refs), len(texts))
        unscorable = self._unscorable(refs)
        if unscorable is not None:
            return unscorable
        pair_scores = self.scores.memory.pairs
        out = np.empty((len(refs), len(texts)), dtype=np.float32)
        for i, ref in enumerate(refs):
            for j, text in enumerate(texts):
                out[i, j] = pair_scores[(ref.key, text)]
        return out

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float64 embeddings of ``texts`` (a dual encoder's), each encoded once."""
        self.source.require_dual("encode_texts")
        self._texts([t for t in dict.fromkeys(texts) if t not in self.scores.memory.texts])
        return np.stack([self.scores.memory.texts[t] for t in texts])

    def image_vectors(self, refs: Sequence[ImageRef]) -> np.ndarray | Unscorable:
        """Unit-norm float64 embeddings of ``refs`` (a dual encoder's), each encoded once; or
        which images could not be loaded, and why."""
        self.source.require_dual("encode_images")
        unique = {r.key: r for r in refs if r.key not in self.scores.memory.images}
        self._images([r for k, r in unique.items() if k not in self.images.unavailable])
        unscorable = self._unscorable(refs)
        if unscorable is not None:
            return unscorable
        return np.stack([self.scores.memory.images[r.key] for r in refs])

    def _unscorable(self, refs: Sequence[ImageRef]) -> Unscorable | None:
        missing = tuple(r for r in refs if r.key in self.images.unavailable)
        if not missing:
            return None
        return Unscorable(missing, tuple(self.images.unavailable[r.key] for r in missing))

    def _texts(self, texts: list[str]) -> None:
        """Texts from the caches, the rest encoded in batches."""
        batches = list(self.batches(self.scores.texts_to_encode(texts, self.share.common)))
        with self.share.phase("texts", batches, self.scores.memory.texts) as mine:
            for batch in mine:
                self.scores.encode_texts(batch)

    def _images(self, refs: list[ImageRef]) -> None:
        """Images from the caches by content key, the rest decoded and encoded in batches."""
        self.images.key(refs)
        refs = [r for r in refs if r.key not in self.images.unavailable]
        refs = self.scores.images_to_encode(refs, self.images.content_keys, self.share.common)
        if not refs:
            return
        scorer = self.source.scorer  # built before the loader pool starts
        preprocess = getattr(scorer, "preprocess_image", None)
        if not (callable(preprocess) and callable(getattr(scorer, "encode_preprocessed", None))):
            preprocess = None
        method = "encode_images" if preprocess is None else "encode_preprocessed"
        todo, memory = list(self.batches(refs)), self.scores.memory.images
        with (
            self.share.phase("images", todo, memory, self.images.unavailable) as mine,
            tracked(self.spec.name, sum(map(len, mine)), self.progress) as progress,
        ):
            for batch, inputs in self.images.loaded_batches(
                mine,
                preprocess,
                self.source.user_code,
                overlap=not _on_cpu(scorer),
                device=self._device_decode(scorer, preprocess),
                workers=self.options.workers,
                pixels=transform_namespace(scorer, self.options.decode),
            ):
                if not batch:
                    continue
                self.scores.encode_images(method, batch, inputs, self.images.content_keys)
                if progress is not None:
                    progress.advance(len(batch))

    def _device_decode(self, scorer: Any, preprocess: Any) -> DeviceDecode | None:
        """The device path of ``--vl-decode gpu`` (the settings refuse it for a model on the
        CPU; here any device is taken, which lets tests run the path on the CPU)."""
        if self.options.decode != "gpu" or preprocess is None:
            return None
        if self._device is None:
            self._device = DeviceDecode.for_scorer(scorer, self.spec.name) or False
        return self._device if isinstance(self._device, DeviceDecode) else None

    def _pairs(self, images: dict[ImageKey, ImageRef], pairs: list[Pair]) -> None:
        """Cross-encoder scores from the caches, the rest scored in batches of unique pairs,
        each image decoded once per batch."""
        self.images.key(list({key: images[key] for key, _ in pairs}.values()))
        pairs = [p for p in pairs if p[0] not in self.images.unavailable]
        content = self.images.content_keys
        for batch in self.batches(by_image(self.scores.pairs_to_score(pairs, content))):
            refs = list({key: images[key] for key, _ in batch}.values())
            loaded = dict(zip((r.key for r in refs), self.images.load_all(refs), strict=True))
            batch = [p for p in batch if loaded[p[0]] is not None]
            if batch:
                self.scores.score_pairs(batch, [loaded[key] for key, _ in batch], content)

    def batches(self, items: Sequence[Any]) -> Iterator[list[Any]]:
        """``items`` in batches of the scorer's own ``batch_size`` (a torch backend's, sized
        to its device) or ``--vl-batch-size``; the scorer is built only if there are items."""
        if not items:
            return
        size = getattr(self.source.scorer, "batch_size", None)
        if not isinstance(size, int) or size < 1:
            size = self.options.batch_size
        for start in range(0, len(items), size):
            yield list(items[start : start + size])


def by_image(pairs: list[Pair]) -> list[Pair]:
    """Pairs grouped by image, images in first-seen order: a batch then holds few unique
    images, and a pair scorer that shares vision features within a batch (``vqa:``) runs
    its vision tower once per unique image."""
    order: dict[ImageKey, int] = {}
    for key, _ in pairs:
        order.setdefault(key, len(order))
    return sorted(pairs, key=lambda pair: order[pair[0]])


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
