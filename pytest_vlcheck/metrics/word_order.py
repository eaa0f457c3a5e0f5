"""What a word-order-blind model can reach: choices whose competing texts reuse the true
text's words in another order (MIEB: 572 of SugarCrepe's 7,511 pairs are one multiset).

A bag-of-words model scores such a negative exactly as the true text, so it can only tie
there: under ``ties: fail`` it fails them all, and its pass rate is at most one minus their
share; under ``ties: first`` it wins its ties.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9']+")

Choice = tuple[str, Sequence[str]]
"""A true text and the texts it must beat."""


def words(text: str) -> list[str]:
    """Lower-cased words with punctuation removed: what the audit's text checks compare."""
    return _WORD.findall(text.lower())


def reuses_words(choices: Sequence[Choice]) -> bool:
    """Whether some competing text of these choices is the true text's words reordered (or
    repeated as they are): one multiset of words."""
    for true_text, others in choices:
        truth = Counter(words(true_text))
        if any(Counter(words(other)) == truth for other in others):
            return True
    return False


def reordered_share(examples: Sequence[Sequence[Choice]]) -> float | None:
    """The share of examples with a competing text made of the true text's words; None when
    no example has a choice among texts."""
    asked = [choices for choices in examples if choices]
    if not asked:
        return None
    return sum(reuses_words(choices) for choices in asked) / len(asked)
