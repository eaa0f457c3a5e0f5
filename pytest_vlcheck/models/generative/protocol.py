"""What a generative model answers, beside the pair scores: the public generative methods.

A scorer that has all three methods below serves the generative task kinds (``choice``,
``answer``, ``match`` with ``decide: yes_vs_no``); the ``vqa:`` backend has them, and so may a
``py:`` scorer. Every ``prompts[i]`` is the user's message about ``images[i]`` (a question,
with lettered options where the test writes them); the scorer wraps it as its model expects
(``vqa:``: the chat template and its generation prompt) and may say what it sent through an
optional ``rendered_prompt(prompt)`` (written to samples.jsonl as ``prompt``).

``check_answers`` turns a result of the wrong shape or type into one ``ScorerProtocolError``
naming the model and the method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_vlcheck.errors import ScorerProtocolError

if TYPE_CHECKING:
    from PIL.Image import Image

GENERATIVE_METHODS = ("score_continuations", "next_token_logprobs", "generate")


@runtime_checkable
class GenerativeScorer(Protocol):
    """Teacher-forced log-probabilities and greedy generation after a prompt about an image."""

    def score_continuations(
        self, images: list[Image], prompts: list[str], continuations: list[str]
    ) -> Any:
        """[len(images)]: the summed log-probability of ``continuations[i]``'s tokens as the
        answer to ``prompts[i]`` about ``images[i]`` (lm-eval's ``acc``)."""

    def next_token_logprobs(
        self, images: list[Image], prompts: list[str], candidates: list[str]
    ) -> Any:
        """[len(images), len(candidates)]: the log-probability of each candidate (a letter,
        ``Yes``/``No``) as the answer to ``prompts[i]`` about ``images[i]``."""

    def generate(self, images: list[Image], prompts: list[str], max_new_tokens: int) -> Any:
        """One greedy answer (str) per prompt, at most ``max_new_tokens`` tokens each."""


def is_generative(scorer: object) -> bool:
    """Whether ``scorer`` has every generative method."""
    return all(callable(getattr(scorer, m, None)) for m in GENERATIVE_METHODS)


def check_answers(value: Any, expected: int, method: str, spec: str) -> list[str]:
    """``generate``'s result as a list of ``expected`` strings, or one line saying why not."""
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != expected:
        size = len(value) if isinstance(value, Sequence) and not isinstance(value, str) else None
        got = type(value).__name__ if size is None else f"{size} item(s)"
        raise ScorerProtocolError(
            f"model '{spec}': {method} returned {got} for {expected} prompts; expected a list "
            f"of {expected} strings (one answer per prompt)"
        )
    bad = [i for i, text in enumerate(value) if not isinstance(text, str)]
    if bad:
        raise ScorerProtocolError(
            f"model '{spec}': {method} returned {type(value[bad[0]]).__name__} in row {bad[0]}; "
            "expected a string per prompt"
        )
    return list(value)
