"""Seeded text perturbations that keep a caption's meaning: typos (CheckList's ``add_typos``).

Paraphrases cannot be made without a language model, so invariance tests give them; typos
swap two neighbouring letters inside a word, as CheckList does. Seeds come from
``images.perturb.derive_seed`` (SHA-256), so every process writes the same typos.
"""

from __future__ import annotations

import random

TEXT_KINDS = ("typos", "paraphrase")
"""Text perturbation kinds an invariance example may list."""
MAX_TYPOS = 3


def add_typos(text: str, count: int, seed: int) -> str:
    """``text`` with ``count`` swaps of two different neighbouring letters of one word.

    Each swap is drawn from the positions still available (a swapped pair is not swapped
    back); a text without such a pair (``"a"``, ``"aa b"``) comes back unchanged, which the
    caller reports.
    """
    rng = random.Random(seed)
    chars = list(text)
    used: set[int] = set()
    for _ in range(count):
        spots = [
            i
            for i in range(len(chars) - 1)
            if chars[i].isalpha()
            and chars[i + 1].isalpha()
            and chars[i] != chars[i + 1]
            and not used & {i - 1, i, i + 1}
        ]
        if not spots:
            break
        i = rng.choice(spots)
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
        used.add(i)
    return "".join(chars)
