"""Token ids a live model's texts were given, kept across a training loop's calls.

A training loop's ``evaluate`` calls ask the same texts of new weights: every call after an
update encodes every text again, and open_clip's tokenizer (ftfy, HTML unescaping and a
regex per text, in Python) took 0.5-0.7 s of such a call for the bundled suite's 3,397
texts on this project's CPU machine, as long as a 224-px model's forward passes on a GPU.
The ids depend on the text and the tokenizer alone, so they are kept per tokenizer object
(held weakly: the memo goes with it) for the life of the process, with which texts it cut.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

LIMIT = 262_144
"""Texts kept per tokenizer (about 160 MB of int64 ids at open_clip's 77-token context);
later texts are tokenised at every call, and nothing kept is pushed out (a least-recently-
used memo over a scan larger than itself keeps nothing)."""

_MEMOS: weakref.WeakKeyDictionary[Any, TokenMemo] = weakref.WeakKeyDictionary()


class TokenMemo:
    """One tokenizer's rows of token ids by text (each a 1-D tensor), and the texts it cut."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.rows: dict[str, Any] = {}
        self.cut: set[str] = set()

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The unique ``texts`` not kept, in order."""
        return [text for text in dict.fromkeys(texts) if text not in self.rows]

    def keep(self, rows: dict[str, Any], cut: set[str]) -> None:
        """Keep freshly made ``rows`` (copies, so no batch's storage is held) while there is
        room; ``cut`` are those the tokenizer truncated."""
        for text, row in rows.items():
            if len(self.rows) >= self.limit:
                return
            self.rows[text] = row.clone()
            if text in cut:
                self.cut.add(text)


def token_memo(tokenizer: Any) -> TokenMemo | None:
    """The process's memo of ``tokenizer`` (None when the object cannot be held weakly)."""
    try:
        memo = _MEMOS.get(tokenizer)
        if memo is None:
            memo = _MEMOS[tokenizer] = TokenMemo()
    except TypeError:  # not weakly referenceable, or not hashable
        return None
    return memo
