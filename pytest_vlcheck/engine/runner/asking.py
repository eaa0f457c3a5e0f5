"""Ask a generative model what the asking tests need (``tasks.asking``), then judge them.

``answer_asks`` sends each unique request once: requests are deduplicated by their key (the
method, image, prompt, options and ``max_new_tokens``), grouped by method and options, cut
into batches of the scorer's ``batch_size`` and their replies kept in the runner's memory for
the run (a live model's runner forgets them on each call: the weights may have changed).
Replies are not written to the embedding cache. ``judge_asking`` reads them back for one
test and lets its kind judge them; an example whose image cannot be loaded gets no reply and
is unscorable, as for a grid kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_vlcheck import fmt
from pytest_vlcheck.errors import ScorerProtocolError, VlcheckUserError
from pytest_vlcheck.models.generative.protocol import (
    GENERATIVE_METHODS,
    check_answers,
    is_generative,
)
from pytest_vlcheck.tasks.asking import Ask, AskingTask, Reply

if TYPE_CHECKING:
    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine.runner.model_runner import ModelRunner
    from pytest_vlcheck.images.refs import ImageRef
    from pytest_vlcheck.tasks import Example

_METHOD = {
    "continuations": "score_continuations",
    "next_token": "next_token_logprobs",
    "generate": "generate",
}


class NotGenerativeError(VlcheckUserError, RuntimeError):
    """A test that asks a generative model met a model without the generative methods."""


def asking_requests(tests: Iterable[ChecklistTest]) -> list[Ask]:
    """Every request of the asking tests among ``tests`` (the others score grids)."""
    from pytest_vlcheck.tasks import get_task

    out: list[Ask] = []
    for test in tests:
        task = get_task(test.task)
        if isinstance(task, AskingTask) and task.asks_model(test.settings):
            out += [ask for example in test.examples for ask in task.asks(test.settings, example)]
    return out


def require_generative(runner: ModelRunner, kind: str) -> Any:
    """The runner's scorer, if it has the generative methods; else one line saying so."""
    scorer = runner.source.scorer
    if not is_generative(scorer):
        raise NotGenerativeError(
            f"{fmt.with_article(kind)} test asks a generative model to answer; model "
            f"'{runner.spec.text}' has "
            f"no {', '.join(GENERATIVE_METHODS)} (an embedding or pair-scoring model); "
            "expected vqa:MODEL (LLaVA, Qwen2-VL, PaliGemma, ...) or a py: scorer with them"
        )
    return scorer


def answer_asks(runner: ModelRunner, asks: Iterable[Ask]) -> None:
    """Ask the model every request not answered yet (see the module docstring)."""
    memory = runner.replies
    todo = {ask.key: ask for ask in asks if ask.key not in memory}
    if not todo:
        return
    scorer = require_generative(runner, "generative")
    groups: dict[tuple[str, tuple[str, ...], int], list[Ask]] = {}
    for ask in todo.values():
        groups.setdefault((ask.method, ask.options, ask.max_new_tokens), []).append(ask)
    for group in groups.values():
        for batch in runner.batches(group):
            images = runner.images.load_all([ask.image for ask in batch])
            loaded = [(a, image) for a, image in zip(batch, images, strict=True) if image]
            if loaded:
                _ask(runner, scorer, [a for a, _ in loaded], [i for _, i in loaded])


def _ask(runner: ModelRunner, scorer: Any, asks: list[Ask], images: list[Any]) -> None:
    """One call of the scorer for ``asks`` (one method, one set of options)."""
    first = asks[0]
    method = _METHOD[first.method]
    prompts = [ask.prompt for ask in asks]
    call = runner.source.user_code
    function = getattr(scorer, method)
    render = getattr(scorer, "rendered_prompt", None)
    rendered = [str(render(p)) if callable(render) else p for p in prompts]
    if first.method == "generate":
        raw = call(method, function, images, prompts, first.max_new_tokens)
        outputs = check_answers(raw, len(asks), method, runner.spec.text)
        for ask, text, shown in zip(asks, outputs, rendered, strict=True):
            runner.replies[ask.key] = Reply(shown, (), text)
        return
    k = len(first.options)
    if first.method == "next_token":
        raw = call(method, function, images, prompts, list(first.options))
        rows = _numbers(raw, (len(asks), k), method, runner.spec.text)
    else:  # each option as the continuation of each prompt
        repeated = [image for image in images for _ in range(k)]
        asked = [prompt for prompt in prompts for _ in range(k)]
        continuations = [option for _ in asks for option in first.options]
        raw = call(method, function, repeated, asked, continuations)
        rows = _numbers(raw, (len(asks) * k,), method, runner.spec.text).reshape(len(asks), k)
    for ask, row, shown in zip(asks, rows, rendered, strict=True):
        runner.replies[ask.key] = Reply(shown, tuple(float(v) for v in row))


def _numbers(raw: Any, shape: tuple[int, ...], method: str, spec: str) -> np.ndarray:
    """``raw`` as fp32 of ``shape``, or one line naming the model and the method."""
    if hasattr(raw, "detach"):
        raw = raw.detach().float().cpu().numpy()
    try:
        array = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != shape:
        got = "no numbers" if array is None else f"shape {list(array.shape)}"
        raise ScorerProtocolError(
            f"model '{spec}': {method} returned {got}; expected log-probabilities of shape "
            f"{list(shape)}"
        )
    return array


def asking_replies(
    test: ChecklistTest, runner: ModelRunner
) -> tuple[list[Example], list[list[Reply]], list[tuple[Example, tuple[ImageRef, ...]]]]:
    """The examples answered with their replies, and the others with their images that
    could not be loaded (``runner.images.unavailable`` says why)."""
    from pytest_vlcheck.tasks import get_task

    task = get_task(test.task)
    if not isinstance(task, AskingTask):
        raise TypeError(f"a {test.task} test does not ask a generative model")
    require_generative(runner, test.task)
    per_example = [(e, task.asks(test.settings, e)) for e in test.examples]
    answer_asks(runner, [ask for _, asks in per_example for ask in asks])
    scored: list[Example] = []
    replies: list[list[Reply]] = []
    lost: list[tuple[Example, tuple[ImageRef, ...]]] = []
    unavailable = runner.images.unavailable
    for example, asks in per_example:
        refs = tuple({a.image.key: a.image for a in asks if a.image.key in unavailable}.values())
        if refs:
            lost.append((example, refs))
        else:
            scored.append(example)
            replies.append([runner.replies[ask.key] for ask in asks])
    return scored, replies, lost
