"""vLLM's chat-completions requests for VQAScore, and what is read from their answers.

Fields read from vLLM's ``vllm/entrypoints/openai/chat_completion/protocol.py`` (commit
002032ee, after PR #43463 added ``logprob_token_ids``; see docs/vqa.md):

- teacher forcing: the user's message ``[image, prompt]`` and the assistant's answer
  prefilled (``continue_final_message: true``, ``add_generation_prompt: false``), with
  ``prompt_logprobs`` (one ``{token id: {logprob}}`` per prompt token, the first null) and
  ``return_token_ids`` (``prompt_token_ids``);
- the answer's tokens: ``prompt_token_ids`` with the answer minus those of the same message
  with the generation prompt instead (``add_generation_prompt: true``); when the second is
  not a prefix of the first the server's tokeniser merged the answer into the prompt, and
  the score is refused, as the in-process ``vqa:`` refuses it;
- one-token candidates: ``logprobs: true`` with ``logprob_token_ids`` and
  ``return_tokens_as_token_ids`` at the first generated position;
- generation: a plain chat completion (``temperature: 0``, ``max_tokens``), which any
  OpenAI-compatible server answers.

Images go as PNG data URIs of the pixels the run loaded (crop applied, never resized: the
server's processor resizes).
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.models.backends.served.client import RequestRefused, ServedError
from pytest_vlcheck.models.backends.vqa_prompt import answer_ids

if TYPE_CHECKING:
    from PIL.Image import Image

SCORING_VERSION = "served-vqa-1"
"""Changes when what is sent or read changes: part of every served fingerprint."""
EXTENSIONS = (
    "continue_final_message",
    "add_generation_prompt",
    "prompt_logprobs",
    "return_token_ids",
    "logprob_token_ids",
    "return_tokens_as_token_ids",
)
GENERATION_ONLY = (
    "without them only generation remains possible (generate: the answer kind); caption, "
    "image, group, match and choice need a vLLM server (vllm serve) or another server with "
    "these fields"
)


def data_uri(image: Image) -> str:
    """The image as a PNG data URI (lossless: the server decodes the run's own pixels)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _user(uri: str, prompt: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": uri}},
            {"type": "text", "text": prompt},
        ],
    }


def generation(model: str, uri: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    """A plain greedy chat completion."""
    return {
        "model": model,
        "messages": [_user(uri, prompt)],
        "max_tokens": max_tokens,
        "temperature": 0,
    }


def open_prompt(model: str, uri: str, prompt: str) -> dict[str, Any]:
    """The prompt with the generation prompt, for its token ids."""
    return {**generation(model, uri, prompt, 1), "return_token_ids": True}


def prefilled(model: str, uri: str, prompt: str, answer: str) -> dict[str, Any]:
    """The prompt with the assistant's answer prefilled, for every prompt token's log-prob."""
    return {
        "model": model,
        "messages": [
            _user(uri, prompt),
            {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        ],
        "add_generation_prompt": False,
        "continue_final_message": True,
        "prompt_logprobs": 1,
        "return_token_ids": True,
        "max_tokens": 1,
        "temperature": 0,
    }


def next_token(model: str, uri: str, prompt: str, ids: list[int]) -> dict[str, Any]:
    """The log-probabilities of ``ids`` at the first position after the generation prompt."""
    return {
        **open_prompt(model, uri, prompt),
        "logprobs": True,
        "logprob_token_ids": ids,
        "return_tokens_as_token_ids": True,
    }


def prompt_ids(answer: Any, where: str) -> list[int]:
    """The ``prompt_token_ids`` of an answer (``return_token_ids``)."""
    ids = answer.get("prompt_token_ids") if isinstance(answer, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise missing_extension(where, "return_token_ids", "prompt_token_ids")
    return ids


def answer_tokens(open_ids: list[int], full_ids: list[int], where: str) -> int:
    """How many tokens end ``full_ids`` as the answer (``vqa_prompt.answer_ids``: one line
    when the server's tokeniser merged the answer into the prompt, or nothing is left)."""
    return len(answer_ids(open_ids, full_ids, f"server {where}"))


def answer_log_prob(answer: Any, count: int, where: str) -> float:
    """The summed log-probability of the last ``count`` prompt tokens (``prompt_logprobs``)."""
    ids = prompt_ids(answer, where)
    entries = answer.get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) != len(ids):
        raise missing_extension(where, "prompt_logprobs", "one entry per prompt token")
    total = 0.0
    for position in range(len(ids) - count, len(ids)):
        entry = entries[position]
        found = entry.get(str(ids[position])) if isinstance(entry, dict) else None
        if not isinstance(found, dict) or not isinstance(found.get("logprob"), (int, float)):
            raise missing_extension(where, "prompt_logprobs", "the prompt token's own logprob")
        total += float(found["logprob"])
    return total


def chosen_log_probs(answer: Any, ids: list[int], where: str) -> list[float]:
    """The log-probabilities of ``ids`` at the first generated position
    (``logprob_token_ids``, tokens written ``token_id:N``)."""
    try:
        first = answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        found = {
            int(str(item["token"]).removeprefix("token_id:")): float(item["logprob"])
            for item in first
        }
    except (KeyError, IndexError, TypeError, ValueError):
        raise missing_extension(where, "logprob_token_ids", "top_logprobs of the ids") from None
    if not all(i in found for i in ids):
        raise missing_extension(where, "logprob_token_ids", "a logprob for every id asked")
    return [found[i] for i in ids]


def generated_text(answer: Any, where: str) -> str:
    """The first choice's message, stripped."""
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ServedError(
            f"server {where}: a chat completion without choices[0].message; expected an "
            "OpenAI-compatible chat completion"
        ) from None
    return str(content or "").strip()


def missing_extension(where: str, field: str, what: str) -> ServedError:
    """The server ignored ``field``: its answer lacks ``what``."""
    return ServedError(
        f"server {where} ignored {field} (its answer has no {what}); a VQAScore needs vLLM's "
        f"chat-completions extensions ({', '.join(EXTENSIONS)}); {GENERATION_ONLY}"
    )


def refused_extension(error: RequestRefused, where: str) -> ServedError:
    """A 4xx answer to a request with extensions, naming the field the server refused."""
    named = [field for field in EXTENSIONS if field in error.detail]
    if error.status not in (400, 422) or not named:
        return error
    return ServedError(
        f"server {where} refused {named[0]} (HTTP {error.status}: {error.detail}); "
        + GENERATION_ONLY
    )
