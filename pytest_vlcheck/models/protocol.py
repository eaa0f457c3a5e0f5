"""The small protocol every scoring backend meets.

A scorer is a dual encoder (``encode_images`` + ``encode_texts``; score = cosine), a
cross-encoder (``score_pairs``), or a reference scorer (``score_refs``: precomputed scores
looked up by how the checklist writes the image, so no pixels are needed). The engine
prefers, in order: ``score_refs``, ``encode_*``, ``score_pairs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL.Image import Image

    from pytest_vlcheck.images.refs import ImageRef


@dataclass(frozen=True)
class ModelOptions:
    """How to run a model: the ``--vl-device``, ``--vl-batch-size``, ``--vl-precision`` options.

    ``device`` is ``auto`` (cuda, then mps, then cpu) or a torch device string;
    ``precision`` is ``fp32``, ``fp16`` or ``bf16`` for the forward pass (decisions are
    always made on fp32 scores).
    """

    device: str = "auto"
    batch_size: int = 64
    precision: str = "fp32"


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


class MissingScore(LookupError):
    """A reference scorer has no score for a pair the checklist needs."""


def scorer_fingerprint(scorer: object) -> str:
    """The scorer's own ``fingerprint`` (changes when its weights change), or empty."""
    return str(getattr(scorer, "fingerprint", "") or "")
