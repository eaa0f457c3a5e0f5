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
from typing import Any, Literal, get_args

from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError

VqaMode = Literal["answer", "caption"]
VQA_MODES: tuple[VqaMode, ...] = get_args(VqaMode)
VqaPreset = Literal["t2v"]
VQA_PRESETS: tuple[VqaPreset, ...] = get_args(VqaPreset)
DEFAULT_QUESTION = 'Does this figure show "{}"? Please answer yes or no.'
DEFAULT_ANSWER = "Yes"
SLOT = "{}"


class VqaPromptError(VlcheckUserError, ValueError):
    """A question template, answer or mode that cannot make a VQAScore prompt."""


@dataclass(frozen=True)
class VqaPrompt:
    """The ``--vl-vqa-question`` template (one ``{}`` for the text), ``--vl-vqa-answer``,
    ``--vl-vqa-mode`` and ``--vl-vqa-preset``; part of a vqa model's cache namespace and of
    the run conditions."""

    question: str = DEFAULT_QUESTION
    answer: str = DEFAULT_ANSWER
    mode: VqaMode = "answer"
    preset: VqaPreset | None = None
    """``t2v``: t2v_metrics' LLaVA-1.5 scoring (``t2v_preset``); None: the chat template."""

    def check(self, names: Sequence[str] = ("question", "answer", "mode", "preset")) -> None:
        """Refuse a template without exactly one ``{}``, an empty answer, an unknown mode or
        preset, or the preset in caption mode; ``names`` are the four options as the caller
        spells them."""
        question, answer, mode, preset = names
        if self.mode not in VQA_MODES:
            raise VqaPromptError(f"{mode} is {self.mode!r}; expected one of {VQA_MODES}")
        if self.preset is not None and self.preset not in VQA_PRESETS:
            raise VqaPromptError(f"{preset} is {self.preset!r}; expected one of {VQA_PRESETS}")
        if self.mode == "caption":
            if self.preset is not None:
                raise VqaPromptError(
                    f"{preset} {self.preset!r} is a VQAScore procedure but {mode} is 'caption'; "
                    f"expected {mode} 'answer' with a preset"
                )
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
            return "caption after the answer separator"
        if self.preset == "t2v":
            return f"t2v_metrics LLaVA-1.5: answer {self.answer!r} and EOS to {self.question!r}"
        return f"answer {self.answer!r} after the answer separator to {self.question!r}"

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


def chat_separator(processor: Any) -> tuple[str, str]:
    """What goes between the generation prompt and the answer, and where that was read.

    The chat template is rendered twice for one user message: with the generation prompt, and
    with an assistant turn instead; the text between the first rendering (a prefix of the
    second) and the assistant's words is the separator the model was trained to write (LLaVA-1.5
    ``ASSISTANT:`` then a space, Qwen2-VL ``assistant\\n`` then nothing). A template that cannot
    render an assistant turn, or renders it otherwise, gets the rule the generation prompt's
    last character gives: a space after a visible character, nothing after whitespace."""
    user = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q"}]}
    turn = {"role": "assistant", "content": [{"type": "text", "text": _PROBE}]}
    asked = str(processor.apply_chat_template([user], add_generation_prompt=True, tokenize=False))
    try:
        answered = str(processor.apply_chat_template([user, turn], tokenize=False))
    except Exception:  # a template's own refusal: jinja raises errors of its own
        answered = ""
    rest = answered[len(asked) :] if answered.startswith(asked) else ""
    found = rest.find(_PROBE)
    if found >= 0 and not rest[:found].strip():
        return rest[:found], "the chat template's assistant turn"
    return (" " if asked and not asked[-1].isspace() else ""), "the generation prompt's end"


_PROBE = "Yes"
"""The assistant's words in ``chat_separator``'s rendering."""


def after_separator(separator: str, answer: str) -> str:
    """``answer`` as it follows the generation prompt: after ``separator``, unless it starts
    with whitespace of its own (an answer spelled with its separator, e.g. ``' Yes'``)."""
    return answer if answer[:1].isspace() else separator + answer
