"""What a generative VLM is asked, and which of its tokens are scored (the ``vqa:`` backend).

VQAScore (Lin et al. 2024) scores a pair by the probability that the model answers ``Yes``
to ``Does this figure show "{text}"? Please answer yes or no.`` given the image. Here the
score is the mean log-probability of the answer's tokens (teacher-forced after the prompt),
so that scores near probability 1 stay apart in fp32; ``match`` compares ``exp(score)`` with
its cut-off. ``caption`` mode scores the text's own tokens after an empty question
(VisualGPTScore). Pure Python: the options are checked before torch is imported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError

VqaMode = Literal["answer", "caption"]
VQA_MODES: tuple[VqaMode, ...] = get_args(VqaMode)
DEFAULT_QUESTION = 'Does this figure show "{}"? Please answer yes or no.'
DEFAULT_ANSWER = "Yes"
SLOT = "{}"


class VqaPromptError(VlcheckUserError, ValueError):
    """A question template, answer or mode that cannot make a VQAScore prompt."""


@dataclass(frozen=True)
class VqaPrompt:
    """The ``--vl-vqa-question`` template (one ``{}`` for the text), ``--vl-vqa-answer`` and
    ``--vl-vqa-mode``; part of a vqa model's cache namespace and of the run conditions."""

    question: str = DEFAULT_QUESTION
    answer: str = DEFAULT_ANSWER
    mode: VqaMode = "answer"

    def check(self, names: Sequence[str] = ("question", "answer", "mode")) -> None:
        """Refuse a template without exactly one ``{}``, an empty answer or an unknown mode;
        ``names`` are the three options as the caller spells them."""
        question, answer, mode = names
        if self.mode not in VQA_MODES:
            raise VqaPromptError(f"{mode} is {self.mode!r}; expected one of {VQA_MODES}")
        if self.mode == "caption":
            return
        if self.question.count(SLOT) != 1:
            raise VqaPromptError(
                f"{question} {self.question!r} has {self.question.count(SLOT)} '{{}}'; expected "
                f"one '{{}}' where the text goes, e.g. {DEFAULT_QUESTION!r}"
            )
        if not self.answer.strip():
            raise VqaPromptError(
                f"{answer} is empty; expected the answer whose probability is the score, "
                f"e.g. {DEFAULT_ANSWER!r}"
            )

    def ask(self, text: str) -> tuple[str, str]:
        """(question, answer) for one pair's text: the template filled and the fixed answer,
        or in ``caption`` mode an empty question and the text itself."""
        if self.mode == "caption":
            return "", text
        before, after = self.question.split(SLOT)
        return before + text + after, self.answer

    def describe(self) -> str:
        """One line naming what is asked (run conditions, cache namespace)."""
        if self.mode == "caption":
            return "caption"
        return f"answer {self.answer!r} to {self.question!r}"

    def digest(self) -> str:
        """A short hash of ``describe()``, for fingerprints."""
        return hashlib.sha256(self.describe().encode("utf-8")).hexdigest()[:16]


def answer_ids(prompt_ids: Sequence[int], full_ids: Sequence[int], where: str) -> list[int]:
    """The answer's token ids: those of ``tokenize(prompt + answer)`` after the prompt's.

    One line when the prompt's ids are not a prefix (the tokenizer merged across the
    boundary) or when nothing is left (an answer that tokenises to nothing)."""
    prompt, full = list(prompt_ids), list(full_ids)
    if full[: len(prompt)] != prompt:
        raise ModelLoadError(
            f"{where}: the prompt's tokens are not a prefix of the prompt-plus-answer's (the "
            "tokenizer merges across the boundary); expected an answer that starts a new "
            "token, e.g. with a leading space: --vl-vqa-answer ' Yes'"
        )
    if len(full) == len(prompt):
        raise ModelLoadError(
            f"{where}: the answer tokenises to nothing after the prompt; expected an answer "
            "with at least one token"
        )
    return full[len(prompt) :]
