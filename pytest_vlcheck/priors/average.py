"""Several priors as one: each caption's perplexity is the mean of the priors' perplexities.

This is the seed's AVG_LM (GPT-2-XL, OPT-1.3B and GPT-J-6B averaged per caption). Every
unique caption is scored once per prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.metrics.priors import mean_perplexity
from pytest_vlcheck.priors.protocol import TextPrior


class PriorOutputError(VlcheckUserError, ValueError):
    """A prior that broke the protocol (the wrong number of NLLs): the user's code, told in
    one line naming the prior, never a traceback."""


def checked_nll(prior: TextPrior, texts: list[str], spec: str | None = None) -> np.ndarray:
    """The prior's NLLs of ``texts`` as float64, one per text (else a clear error naming
    ``spec``, the ``--vl-prior`` value, when known)."""
    values = np.asarray(prior.text_nll(texts), dtype=np.float64).reshape(-1)
    if values.shape[0] != len(texts):
        shown = spec or getattr(prior, "name", type(prior).__name__)
        raise PriorOutputError(
            f"--vl-prior {shown}: its text_nll returned {values.shape[0]} NLLs for "
            f"{len(texts)} texts; expected one per text"
        )
    return values


@dataclass(frozen=True)
class AveragePrior:
    """The mean perplexity of several priors (one prior is its own average)."""

    priors: tuple[TextPrior, ...]
    name: str = "prior"
    specs: tuple[str, ...] = ()
    """Each prior's ``--vl-prior`` spec, for messages (empty: their names)."""

    def perplexity(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """Perplexity [len(texts)] averaged over the priors; each unique text is scored once."""
        unique = sorted(set(texts))
        if not unique:
            return np.zeros(0, dtype=np.float64)
        specs = self.specs or (None,) * len(self.priors)
        averaged = mean_perplexity(
            [checked_nll(p, unique, spec) for p, spec in zip(self.priors, specs, strict=True)]
        )
        lookup = dict(zip(unique, averaged, strict=True))
        return np.array([lookup[text] for text in texts], dtype=np.float64)

    def text_nll(self, texts: list[str]) -> npt.NDArray[np.float64]:
        """The log of the averaged perplexity, so an AveragePrior is itself a TextPrior."""
        return np.log(self.perplexity(texts))


def caption_perplexities(prior: AveragePrior, texts: Sequence[str]) -> dict[str, float]:
    """Each unique text's averaged perplexity, for callers that look captions up by text."""
    unique = sorted(set(texts))
    return dict(zip(unique, (float(p) for p in prior.perplexity(unique)), strict=True))
