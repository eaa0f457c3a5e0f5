"""The protocol a linguistic prior meets: one mean token NLL per text."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


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
