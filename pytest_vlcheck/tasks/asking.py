"""What a task kind that asks a generative model needs beside the ``Task`` protocol.

Such a kind (``choice``, ``answer``, ``match`` with ``decide: yes_vs_no``) does not score an
(images x texts) grid: it sends ``Ask`` requests (one method of the generative scorer
protocol, one image, one prompt) and judges the ``Reply`` of each. The engine deduplicates
equal requests across tests (the key holds the method, image, prompt, options and
``max_new_tokens``: generation settings are part of it), batches them and keeps the replies
in memory for the run. What the model saw and said is kept per example (``Judgement.said``)
and written to samples.jsonl.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_vlcheck.images.refs import ImageRef
    from pytest_vlcheck.parsing.fields import Fields
    from pytest_vlcheck.tasks.protocol import Judgement

Method = Literal["continuations", "next_token", "generate"]
"""``score_continuations``, ``next_token_logprobs`` or ``generate`` of the scorer."""

AskKey = tuple[str, Any, str, tuple[str, ...], int]


@dataclass(frozen=True)
class Ask:
    """One request: ``prompt`` about ``image``; ``options`` are the continuations or
    candidates scored; ``max_new_tokens`` bounds a generation."""

    method: Method
    image: ImageRef
    prompt: str
    options: tuple[str, ...] = ()
    max_new_tokens: int = 0

    @property
    def key(self) -> AskKey:
        """Equal requests share one reply."""
        return (self.method, self.image.key, self.prompt, self.options, self.max_new_tokens)


@dataclass(frozen=True)
class Reply:
    """The model's reply: one log-probability per option, or the generated ``output``;
    ``rendered`` is the exact text sent (after the chat template) when the scorer says it."""

    rendered: str
    scores: tuple[float, ...] = ()
    output: str | None = None


@runtime_checkable
class AskingTask(Protocol):
    """A task kind whose tests (all, or those with some settings) ask a generative model."""

    def asks_model(self, settings: Mapping[str, Any]) -> bool:
        """Whether a test with ``settings`` asks the model instead of scoring a grid."""
        ...

    def asks(self, settings: Mapping[str, Any], example: Any) -> list[Ask]:
        """The requests one example needs, in the order ``judge_replies`` reads them."""
        ...

    def judge_replies(
        self, settings: Mapping[str, Any], examples: Sequence[Any], replies: Sequence[list[Reply]]
    ) -> Judgement:
        """Outcomes from each example's replies; ``said`` and ``scores`` per example."""
        ...

    def describe_reply(self, example: Any, said: Mapping[str, Any]) -> str:
        """One line for a failing example: what was right and what the model said."""
        ...


def asks_model(task: object, settings: Mapping[str, Any]) -> bool:
    """Whether a test of ``task`` with ``settings`` asks a generative model."""
    return isinstance(task, AskingTask) and task.asks_model(settings)


QUESTION_SLOT = "{question}"
OPTIONS_SLOT = "{options}"


def parse_prompt(fields: Fields, default: str, *, options: bool) -> str:
    """``prompt``: the template a test asks with; ``{question}`` is the example's question
    and, where the kind shows options, ``{options}`` their lettered lines."""
    template = fields.text("prompt", default)
    needed = [QUESTION_SLOT, OPTIONS_SLOT] if options else [QUESTION_SLOT]
    for slot in needed:
        if template.count(slot) != 1:
            fields.fail(
                f"'prompt' has {template.count(slot)} '{slot}'; expected exactly one, e.g. "
                f"{default!r}",
                "prompt",
            )
    return template


def fill_prompt(template: str, question: str, options: str = "") -> str:
    """The template with its slots filled (plain replacement: other braces stay as written)."""
    return template.replace(QUESTION_SLOT, question).replace(OPTIONS_SLOT, options)


def parse_max_new_tokens(fields: Fields, default: int) -> int:
    """``max_new_tokens``: how long a generated answer may be (a whole number 1-512)."""
    value = fields.number("max_new_tokens", default, low=1, high=512)
    if value != int(value):
        fields.fail(f"'max_new_tokens' is {value:g}; expected a whole number 1-512")
    return int(value)


class NotGridJudged(TypeError):
    """A kind that asks a generative model was handed a score grid (an engine bug)."""


def refuse_grid(name: str) -> NoReturn:
    """What such a kind's ``judge`` does: its tests are judged by ``judge_replies``."""
    raise NotGridJudged(f"{name} tests are judged from the model's replies (judge_replies)")
