"""The small protocol every scoring backend meets.

A scorer is a dual encoder (``encode_images`` + ``encode_texts``; score = cosine), a
cross-encoder (``score_pairs``), or a reference scorer (``score_refs``: precomputed scores
looked up by how the checklist writes the image, so no pixels are needed). The engine
prefers, in order: ``score_refs``, ``encode_*``, ``score_pairs``.

``check_scorer`` and ``check_rows`` turn a scorer that breaks the protocol (no methods, wrong
shapes, NaN or infinite embeddings) into one ``ScorerProtocolError`` naming the model and the
method, instead of a numpy error deep inside the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from pytest_vlcheck import fmt
from pytest_vlcheck.errors import ScorerProtocolError, VlcheckUserError
from pytest_vlcheck.models.backends.served.options import ServedOptions
from pytest_vlcheck.models.backends.vqa_prompt import VqaPrompt
from pytest_vlcheck.models.generative.protocol import is_generative

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.images.refs import ImageRef

Precision = Literal["fp32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
Decode = Literal["cpu", "gpu"]
DECODES: tuple[Decode, ...] = get_args(Decode)
"""Where JPEGs are decoded and resized (``--vl-decode``): by PIL, or on the model's device."""


@dataclass(frozen=True)
class ModelOptions:
    """How to run a model: the ``--vl-device``, ``--vl-batch-size``, ``--vl-precision`` options.

    ``device`` is ``auto`` (cuda, then mps, then cpu) or a torch device string;
    ``precision`` is ``fp32``, ``fp16`` or ``bf16`` for the forward pass (decisions are
    always made on fp32 scores). ``auto_batch`` (``--vl-batch-size=auto``, the default) lets
    a backend size its batches to the device it loads on; ``batch_size`` is then the size
    for a CPU (see ``models.batching.device_batch_size``). ``vqa`` is what a generative model
    (``vqa:``, a live image-text-to-text model) is asked (``--vl-vqa-*``).
    """

    device: str = "auto"
    batch_size: int = 64
    precision: Precision = "fp32"
    auto_batch: bool = False
    vqa: VqaPrompt = field(default_factory=VqaPrompt)
    decode: Decode = "cpu"
    """``gpu``: JPEGs decoded and resized on the model's device
    (``models.pixels.device_transform``)."""
    workers: int | None = None
    """Cores preparing images beside a model on an accelerator (``--vl-workers``; None: this
    process's share, ``engine.image_processes.preparation``); results do not depend on
    it, so it is no run condition and names no cache namespace."""
    served: ServedOptions = field(default_factory=ServedOptions)
    """How a served model (``vqa:http://...``) is reached (``--vl-concurrency`` ...)."""


@dataclass(frozen=True)
class ModelIdentity:
    """What a model computes, known without building it: the embedding cache's namespace.

    ``fingerprint`` equals the loaded scorer's own; ``preprocessing`` names what turns
    inputs into model inputs beyond the weights (library version, architecture).
    """

    fingerprint: str
    preprocessing: str


@dataclass(frozen=True)
class ModelSpec:
    """One ``--vl-model``: ``name`` labels items and matrix columns, ``text`` is as given."""

    name: str
    text: str
    scheme: str
    body: str
    group: str | None = None
    """The name the checkpoints of one glob share (their scalar prefix); None otherwise."""
    step: int | None = None
    """A glob checkpoint's training step, read from its file name."""

    @classmethod
    def for_object(cls, name: str, model: object) -> ModelSpec:
        """The spec a model object handed to ``evaluate`` is reported under
        (``matrix.json``'s ``models[].spec``): no scheme, no body."""
        return cls(name=name, text=f"<{type(model).__name__} object>", scheme="", body="")


Digest = Callable[["Path"], str]
"""sha256 hex of a file's bytes (``EmbeddingCache.file_digest`` remembers unchanged files)."""


@runtime_checkable
class DualEncoder(Protocol):
    """Embeds images and texts separately; the engine scores pairs by cosine similarity."""

    def encode_images(self, images: list[Image]) -> Any:
        """Return an array_like of shape [len(images), D]."""

    def encode_texts(self, texts: list[str]) -> Any:
        """Return an array_like of shape [len(texts), D]."""


@runtime_checkable
class PairScorer(Protocol):
    """Scores (images[i], texts[i]) jointly, e.g. an image-text matching head."""

    def score_pairs(self, images: list[Image], texts: list[str]) -> Any:
        """Return an array_like of shape [len(images)]; a probability for ``match`` tasks."""


@dataclass(frozen=True)
class RefPair:
    """One score a reference scorer is asked for: the image as written, a text, the example."""

    image: ImageRef
    text: str
    example_id: str


@runtime_checkable
class RefScorer(Protocol):
    """Looks scores up by image reference; never opens an image."""

    def score_refs(self, pairs: Sequence[RefPair]) -> Any:
        """Return an array_like of shape [len(pairs)]; raise ``MissingScore`` for gaps."""


Scorer = DualEncoder | PairScorer | RefScorer
"""Any object the engine can score with (``check_scorer`` refuses the rest)."""


class MissingScore(VlcheckUserError, LookupError):
    """A reference scorer has no score for a pair the checklist needs."""


def scorer_fingerprint(scorer: object) -> str:
    """The scorer's own ``fingerprint`` (changes when its weights change), or empty."""
    return str(getattr(scorer, "fingerprint", "") or "")


_METHODS = (
    "encode_images + encode_texts (a dual encoder), score_pairs, score_refs or the generative "
    "methods (score_continuations, next_token_logprobs, generate)"
)


def check_scorer(scorer: object, spec: str) -> None:
    """Refuse an object that has none of the scorer methods (half a dual encoder included)."""
    if isinstance(scorer, (RefScorer, DualEncoder, PairScorer)) or is_generative(scorer):
        return
    has = [m for m in ("encode_images", "encode_texts") if callable(getattr(scorer, m, None))]
    found = f" (it has only {has[0]})" if has else ""
    raise ScorerProtocolError(
        f"model '{spec}' gave {fmt.with_article(type(scorer).__name__)} object{found}, which "
        f"is not a scorer; expected an object with {_METHODS}"
    )


def check_rows(array: np.ndarray, expected: int, method: str, spec: str) -> None:
    """Check one scorer result: ``encode_*`` gives [expected, D] finite rows, ``score_pairs``
    and ``score_refs`` give [expected] scores."""
    import numpy as np  # here, not at the top: the plugin's options import this module

    pairs = method in ("score_pairs", "score_refs")
    want = f"[{expected}]" if pairs else f"[{expected}, D]"
    if array.ndim != (1 if pairs else 2) or array.shape[0] != expected:
        raise ScorerProtocolError(
            f"model '{spec}': {method} returned an array of shape {list(array.shape)} for "
            f"{expected} inputs; expected shape {want}"
            + (" (one score per pair)" if pairs else " (one embedding per input)")
        )
    if not pairs and array.size and not np.isfinite(array).all():
        bad_row = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        kind = "NaN" if np.isnan(array[bad_row]).any() else "infinite values"
        raise ScorerProtocolError(
            f"model '{spec}': {method} returned {kind} in row {bad_row} (of {expected}); "
            "expected finite embeddings"
        )
