"""Prior NLLs in the embedding cache: an unchanged re-run loads no language model.

A prior whose identity is known without loading it keeps each text's NLL in the embedding
cache: a local ``hf:`` directory, or a hub name already in the local hub cache, by the
fingerprint of its files (as the ``hf:`` model backend names a model); a ``py:`` factory that
declares ``vlcheck_fingerprint``. The namespace adds the NLL convention of ``hf_lm`` and the
precision. The language model is loaded only when some text is not cached; NLLs are stored
as float64, so a re-run prints the numbers the first run printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from pytest_vlcheck.engine.scores.content_keys import namespace, text_key
from pytest_vlcheck.models.protocol import ModelIdentity, ModelOptions
from pytest_vlcheck.models.registry import run_precision
from pytest_vlcheck.priors.average import checked_nll
from pytest_vlcheck.priors.protocol import PriorSpec, TextPrior

if TYPE_CHECKING:
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

NLL_CONVENTION = "mean token NLL, BOS prepended, no EOS"
"""What ``hf_lm`` computes; a change to it must change this text (old entries then miss)."""


class CachedPrior:
    """A prior by its spec, loaded (by ``load``) only for texts the cache lacks."""

    def __init__(
        self,
        spec: PriorSpec,
        options: ModelOptions,
        identity: ModelIdentity,
        cache: EmbeddingCache,
        load: Callable[[], TextPrior],
    ) -> None:
        self.name = spec.name
        self.spec = spec.text
        self._load = load
        self._cache = cache
        self._prior: TextPrior | None = None
        precision = run_precision(spec.scheme, options)
        conditions = f"{identity.preprocessing}|{NLL_CONVENTION}|{precision}"
        self._space = namespace(identity.fingerprint, conditions, "nll")

    def text_nll(self, texts: list[str]) -> np.ndarray:
        """Each text's NLL: from the cache, else from the prior (and then cached)."""
        keys = [text_key(text) for text in texts]
        cached = self._cache.get_many(self._space, keys)
        found = {key: value for key, value in cached.items() if value.shape == (1,)}
        missing = {k: t for t, k in zip(texts, keys, strict=True) if k not in found}
        if missing:
            if self._prior is None:
                self._prior = self._load()
            values = checked_nll(self._prior, list(missing.values()), self.spec)
            fresh = {
                key: np.array([value], dtype=np.float64)
                for key, value in zip(missing, values, strict=True)
            }
            self._cache.put_many(self._space, fresh)
            found.update(fresh)
        return np.array([found[k][0] for k in keys], dtype=np.float64)
