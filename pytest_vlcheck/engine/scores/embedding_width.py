"""One model, one embedding width: cached rows that disagree with each other or with what
the model computes are refused, naming the cache file.

A cache namespace is named after the weights' fingerprint, so its rows fit the model unless
the fingerprint was reused by other weights (a ``py:`` factory declaring a fixed
``vlcheck_fingerprint`` across a change of model). Such rows would be scored against fresh
ones and give wrong answers (or a misleading width error blamed on the scorer), so the run
stops with one line saying how to get out: remove the file, or ``--vl-no-cache``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_vlcheck.errors import CacheMismatchError

__all__ = ["EmbeddingWidth"]


@dataclass
class EmbeddingWidth:
    """The width of one model's embeddings, first seen in ``source`` ("cached" or
    "computed"); ``cache_file`` names the cache in the message."""

    model: str
    cache_file: Path | None
    width: int | None = None
    source: str = ""

    def cached(self, rows: Iterable[np.ndarray]) -> None:
        """Rows read from the cache: one width among them and with what was seen before."""
        for width in dict.fromkeys(row.shape[0] for row in rows):
            self._see(width, "cached")

    def computed(self, vectors: np.ndarray) -> None:
        """Vectors the model just computed (two computed widths are the scorer's mistake,
        which ``scoring.cosines`` reports)."""
        self._see(vectors.shape[1], "computed")

    def forget(self) -> None:
        """The weights changed (a live model's next call): any width may follow."""
        self.width, self.source = None, ""

    def _see(self, width: int, source: str) -> None:
        if self.width is None:
            self.width, self.source = width, source
            return
        if width == self.width or "cached" not in (source, self.source):
            return
        raise CacheMismatchError(
            f"{self.cache_file}: the embedding cache holds {self.width}-d and {width}-d "
            f"embeddings for model '{self.model}' ({self.source} first, then {source}): its "
            "fingerprint names two sets of weights (give the model a new fingerprint when its "
            f"weights change); expected one width: delete {self.cache_file} or run with "
            "--vl-no-cache"
        )
