"""The protocol a linguistic prior meets (one mean token NLL per text), and a prior's spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class PriorSpec:
    """One prior: ``name`` labels it, ``text`` is the spec as given."""

    name: str
    text: str
    scheme: str
    body: str


@runtime_checkable
class TextPrior(Protocol):
    """Scores texts without any image.

    ``text_nll(texts)`` returns an array_like [len(texts)] of mean token negative
    log-likelihoods (natural log); the perplexity of a text is ``exp(nll)``. Lower is more
    likely. ``py:MODULE:FACTORY`` priors return an object with this method (plus an optional
    ``name``).
    """

    def text_nll(self, texts: list[str]) -> Any:
        """Mean token NLL of each text."""
