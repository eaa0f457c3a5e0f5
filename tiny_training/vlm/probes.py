"""Held-out probes of ``tiny-vlm``: new scenes at the checklists' 224 px (resized by the model's
own image processor, as at test time), ``n`` questions of every kind; a probe is right when the
greedy answer's first token is the right answer (every answer is one word, one token)."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from PIL import Image

from tiny_training.vlm.batches import chat_prompt
from tiny_training.vlm.pool import ScenePool
from tiny_training.vlm.questions import KINDS, Question

PROBE_CANVAS = 224
CHANCE = {
    "caption": 1 / 2,
    "count": 1 / 4,
    "count_choice": 1 / 4,
    "color": 1 / 11,
    "color_choice": (1 / 3 + 1 / 4) / 2,
    "existence": 1 / 2,
    "negation": 1 / 2,
    "relation": 1 / 2,
}
"""A guess's odds: yes/no 1/2; a count among 1-4; a colour among the 11 object colours; a
letter among the 4 counts or the 3-4 colours shown (3 or 4 equally often)."""


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of one question kind."""

    kind: str
    n: int
    right: int

    @property
    def accuracy(self) -> float:
        return self.right / self.n if self.n else 0.0

    @property
    def chance(self) -> float:
        return CHANCE[self.kind]


def probe_questions(
    seed: int, n: int, exclude: Collection[str] = ()
) -> tuple[ScenePool, list[tuple[int, Question]]]:
    """A 224-px pool of new scenes (``seed``) and ``n`` questions of every kind about them."""
    pool = ScenePool(seed, max(4 * n, 40), PROBE_CANVAS, exclude)
    rng = random.Random(seed)
    return pool, [pool.question(kind, rng) for kind in KINDS for _ in range(n)]


def run_probes(
    model: Any, processor: Any, pool: ScenePool, asked: list[tuple[int, Question]], batch: int = 32
) -> list[ProbeResult]:
    """Each kind's accuracy (greedy first token == the answer's token)."""
    import torch

    right: dict[str, int] = {kind: 0 for kind in KINDS}
    total: dict[str, int] = {kind: 0 for kind in KINDS}
    model.eval()
    for start in range(0, len(asked), batch):
        chunk = asked[start : start + batch]
        inputs = processor(
            images=[Image.fromarray(pool.pixels[i]) for i, _ in chunk],
            text=[chat_prompt(processor, q.prompt) for _, q in chunk],
            padding=True,
            padding_side="left",
            return_tensors="pt",
        )
        with torch.no_grad():
            logits = model(**inputs, logits_to_keep=1).logits[:, -1]
        picked = logits.argmax(dim=-1).tolist()
        for (_, q), token in zip(chunk, picked, strict=True):
            answer = processor.tokenizer(" " + q.answer, add_special_tokens=False)["input_ids"]
            right[q.kind] += int(token == answer[0])
            total[q.kind] += 1
    return [ProbeResult(kind, total[kind], right[kind]) for kind in KINDS]
