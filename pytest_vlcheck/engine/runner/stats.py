"""What a runner asked its model to do: counts and seconds for benchmarks and the summary."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass


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
    images_prepared: int = 0
    """Images decoded (or rendered) and preprocessed for the model in this call."""
    images_recalled: int = 0
    """Preprocessed images a live model's image store gave back instead (``ImageStore``)."""
    images_from_disk: int = 0
    """Prepared images an earlier run's pixels gave instead (``PixelCache``)."""
    images_on_device: int = 0
    """Of the prepared images, those decoded and resized on the model's device (``--vl-decode
    gpu``); the others took the CPU path."""
    images_decode_fallback: int = 0
    """Images ``--vl-decode gpu`` left on the CPU path (another format, mode, a crop...)."""
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

    def __add__(self, other: ScoringStats) -> ScoringStats:
        """Two processes' counts and seconds, field by field."""
        return ScoringStats(**{k: v + getattr(other, k) for k, v in asdict(self).items()})


def summed_per_model(parts: Iterable[Mapping[str, ScoringStats]]) -> dict[str, ScoringStats]:
    """Per model, the sum of every process's stats: xdist's workers at the controller and
    torch.distributed's ranks, one rule for both."""
    total: dict[str, ScoringStats] = {}
    for part in parts:
        for name, stats in part.items():
            total[name] = total.get(name, ScoringStats()) + stats
    return total
