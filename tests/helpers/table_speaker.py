"""A scorer that answers from tables a test writes, for end-to-end tests of imported
benchmarks whose numbers are worked out by hand.

An image is known by its code: a solid image of red ``20 * code`` (``code_image``). The
generative methods look up ``ANSWERS[(code, question)]``, a candidate -> log-probability
mapping, for the longest question the prompt starts with (a lettered prompt starts with its
question); ``generate`` answers the likeliest candidate (empty when none); ``score_pairs`` looks up
``PAIRS[(code, text)]``. Anything not in a table scores -9. It is written into the pytester directory and loaded through the public ``py:`` spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

STEP = 20

_SOURCE = """
import numpy as np

ANSWERS = {answers!r}
PAIRS = {pairs!r}


def code_of(image):
    red = np.asarray(image.convert("RGB"), dtype=np.float32)[..., 0].mean()
    return int(round(red / {step}))


def table(image, prompt):
    code = code_of(image)
    asked = [q for c, q in ANSWERS if c == code and prompt.startswith(q)]
    return ANSWERS[code, max(asked, key=len)] if asked else {{}}


class Table:
    name = "table"
    fingerprint = "table-v1"

    def score_pairs(self, images, texts):
        return np.array([PAIRS.get((code_of(i), t), -9.0) for i, t in zip(images, texts)])

    def score_continuations(self, images, prompts, continuations):
        return np.array([table(i, p).get(c, -9.0)
                         for i, p, c in zip(images, prompts, continuations)])

    def next_token_logprobs(self, images, prompts, candidates):
        return np.array([[table(i, p).get(c, -9.0) for c in candidates]
                         for i, p in zip(images, prompts)])

    def generate(self, images, prompts, max_new_tokens):
        return [max(sorted(table(i, p).items()), key=lambda kv: kv[1], default=("",))[0]
                for i, p in zip(images, prompts)]


def make():
    return Table()
"""


def scorer_source(
    answers: dict[tuple[int, str], dict[str, float]],
    pairs: dict[tuple[int, str], float] | None = None,
) -> str:
    """The scorer module's text with its tables."""
    return _SOURCE.format(answers=answers, pairs=pairs or {}, step=STEP)


def code_image(code: int, path: Path | None = None, fmt: str = "PNG") -> Any:
    """A small solid image the scorer reads as ``code``; saved to ``path`` when given."""
    image = Image.new("RGB", (16, 16), (STEP * code, 0, 0))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, format=fmt)
    return image
