"""What a model was asked to do: counted by the runner and its image feed, summed over
xdist workers, printed in the terminal summary and read by benchmarks."""

from __future__ import annotations

from dataclasses import dataclass


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
