"""The served scorer: VQAScore pair scores and the generative methods over HTTP.

A pair's score is the mean log-probability of the answer's tokens (``--vl-vqa-*`` as for the
in-process ``vqa:``), teacher-forced by the server (``chat``): the answer is the assistant's
message, placed by the server's chat template (LLaVA's ``ASSISTANT: Yes``). The generative
methods follow ``generative.protocol``: continuations are teacher-forced the same way and
summed; candidates that are one token each are read at the first generated position
(``logprob_token_ids``), longer ones teacher-forced; generation is greedy.

The fingerprint is what the user names (``#MODEL@REVISION``), else the server's model id
with a ``ServedIdentityWarning``: remote weights cannot be hashed. With the prompt's digest
and ``SCORING_VERSION`` it names the cache namespace of every score (so the cache key holds
the model id, the revision, everything the request is built from, and the scoring version).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.models.backends.served import chat
from pytest_vlcheck.models.backends.served.client import Client, RequestRefused, ServedError
from pytest_vlcheck.models.backends.served.endpoint import Endpoint, parse_endpoint
from pytest_vlcheck.models.protocol import ModelIdentity

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.models.backends.vqa_prompt import VqaPrompt
    from pytest_vlcheck.models.protocol import Digest, ModelOptions

CHAT = "/chat/completions"


class ServedIdentityWarning(UserWarning):
    """A served model without ``@REVISION``: cached scores are filed under its id alone."""


class ServedScorer:
    """A generative VLM behind an OpenAI-compatible server, scoring pairs by VQAScore and
    answering prompts (``generative.protocol.GenerativeScorer``)."""

    match_is_exp = True
    """Scores are log-probabilities: the engine can map them for ``match`` unbuilt."""

    def __init__(
        self, *, name: str, client: Client, model: str, revision: str | None, prompt: VqaPrompt
    ) -> None:
        self.name = name
        self.client = client
        self.model = model
        self.prompt = prompt
        self.fingerprint = served_fingerprint(model, revision, prompt)
        self.where = client.endpoint.shown
        self._open_ids: dict[tuple[str, str], list[int]] = {}
        self._candidate_ids: dict[tuple[str, ...], list[list[int]]] = {}

    def match_probability(self, scores: np.ndarray) -> np.ndarray:
        """exp(mean log-probability): the answer's per-token geometric-mean probability."""
        import numpy as np

        return np.exp(np.asarray(scores, dtype=np.float64)).astype(np.float32)

    def score_pairs(self, images: list[Image], texts: list[str]) -> np.ndarray:
        """The mean log-probability of each pair's answer tokens, fp32 [len(images)]."""
        import numpy as np

        if len(images) != len(texts):
            raise ValueError(f"score_pairs got {len(images)} images but {len(texts)} texts")
        sums, counts = self._teacher_forced(images, [self.prompt.ask(text) for text in texts])
        means: np.ndarray = (np.asarray(sums) / np.asarray(counts)).astype(np.float32)
        return means

    def score_continuations(
        self, images: list[Image], prompts: list[str], continuations: list[str]
    ) -> np.ndarray:
        """The summed log-probability of each continuation's tokens, fp32 [len(images)]."""
        import numpy as np

        asked = list(zip(prompts, continuations, strict=True))
        return np.asarray(self._teacher_forced(images, asked)[0], dtype=np.float32)

    def next_token_logprobs(
        self, images: list[Image], prompts: list[str], candidates: list[str]
    ) -> np.ndarray:
        """Each candidate's log-probability as the answer, fp32 [len(images), candidates]."""
        import numpy as np

        k = len(candidates)
        if not images or not k:
            return np.zeros((len(images), k), dtype=np.float32)
        ids = self._candidates(images[0], prompts[0], candidates)
        if any(len(token) != 1 for token in ids):  # several tokens: teacher-forced sums
            flat = self.score_continuations(
                [image for image in images for _ in range(k)],
                [prompt for prompt in prompts for _ in range(k)],
                [candidate for _ in prompts for candidate in candidates],
            )
            return flat.reshape(len(images), k)
        chosen = [token[0] for token in ids]
        rows = zip(_uris(images), prompts, strict=True)
        answers = self._post([chat.next_token(self.model, uri, p, chosen) for uri, p in rows])
        found = [chat.chosen_log_probs(answer, chosen, self.where) for answer in answers]
        return np.asarray(found, dtype=np.float32).reshape(len(images), k)

    def generate(self, images: list[Image], prompts: list[str], max_new_tokens: int) -> list[str]:
        """Greedy answers (a plain chat completion each), stripped."""
        uris = _uris(images)
        payloads = [
            chat.generation(self.model, uri, prompt, max_new_tokens)
            for uri, prompt in zip(uris, prompts, strict=True)
        ]
        return [chat.generated_text(answer, self.where) for answer in self._post(payloads)]

    def _teacher_forced(
        self, images: list[Image], asked: list[tuple[str, str]]
    ) -> tuple[list[float], list[int]]:
        """Each row's summed answer-token log-probability and its number of answer tokens."""
        uris = _uris(images)
        keys = [(_digest(uri), question) for uri, (question, _) in zip(uris, asked, strict=True)]
        self._learn_open_ids(uris, keys)
        answers = self._post(
            [chat.prefilled(self.model, u, q, a) for u, (q, a) in zip(uris, asked, strict=True)]
        )
        sums, counts = [], []
        for key, answer in zip(keys, answers, strict=True):
            full = chat.prompt_ids(answer, self.where)
            count = chat.answer_tokens(self._open_ids[key], full, self.where)
            sums.append(chat.answer_log_prob(answer, count, self.where))
            counts.append(count)
        return sums, counts

    def _learn_open_ids(self, uris: list[str], keys: list[tuple[str, str]]) -> None:
        """The generation-prompt token ids of every (image, question) not yet known."""
        todo = {key: uri for key, uri in zip(keys, uris, strict=True) if key not in self._open_ids}
        payloads = [chat.open_prompt(self.model, uri, key[1]) for key, uri in todo.items()]
        for key, answer in zip(todo, self._post(payloads), strict=True):
            self._open_ids[key] = chat.prompt_ids(answer, self.where)

    def _candidates(self, image: Image, prompt: str, candidates: list[str]) -> list[list[int]]:
        """Each candidate's token ids after the generation prompt (the template's fixed
        ending, the same for every prompt), learnt once from the first row."""
        found = self._candidate_ids.get(tuple(candidates))
        if found is None:
            uri = _uris([image])[0]
            key = (_digest(uri), prompt)
            self._learn_open_ids([uri], [key])
            answers = self._post([chat.prefilled(self.model, uri, prompt, c) for c in candidates])
            found = []
            for answer in answers:
                full = chat.prompt_ids(answer, self.where)
                count = chat.answer_tokens(self._open_ids[key], full, self.where)
                found.append(full[len(full) - count :])
            self._candidate_ids[tuple(candidates)] = found
        return found

    def _post(self, payloads: list[dict[str, Any]]) -> list[Any]:
        try:
            return self.client.post_all(CHAT, payloads)
        except RequestRefused as exc:
            raise chat.refused_extension(exc, self.where) from None


def _uris(images: list[Image]) -> list[str]:
    """Each image's data URI, encoded once per distinct image object of the call."""
    seen: dict[int, str] = {}
    for image in images:
        if id(image) not in seen:
            seen[id(image)] = chat.data_uri(image)
    return [seen[id(image)] for image in images]


def _digest(uri: str) -> str:
    return hashlib.sha256(uri.encode("ascii")).hexdigest()


def served_fingerprint(model: str, revision: str | None, prompt: VqaPrompt) -> str:
    """The model id and revision the user named, the scoring version and what is asked."""
    return f"served:{model}@{revision or '-'}+{chat.SCORING_VERSION}+vqa:{prompt.digest()}"


def load(body: str, options: ModelOptions) -> ServedScorer:
    """Connect to ``vqa:URL[,URL...][#MODEL[@REVISION]]``: check that every replica serves
    the model (one line when it does not), and warn when no revision names the weights."""
    options.vqa.check(("--vl-vqa-question", "--vl-vqa-answer", "--vl-vqa-mode", "--vl-vqa-preset"))
    endpoint = parse_endpoint(body)
    if options.vqa.preset is not None:
        raise ServedError(
            f"vqa:{endpoint.shown}: --vl-vqa-preset {options.vqa.preset} builds the model's "
            "token ids itself, which a server's chat endpoint does not take; expected the "
            "model in-process (vqa:DIR), or no preset"
        )
    client = Client(endpoint, options.served, _api_key(options.served.api_key_env))
    model = _served_model(client, endpoint)
    if endpoint.revision is None:
        warnings.warn(
            ServedIdentityWarning(
                f"vqa:{endpoint.shown}#{model}: no @REVISION names the served weights, so "
                f"cached scores are filed under the model id '{model}' alone; a retrained "
                f"model served under the same id would read them (name it "
                f"#{model}@REVISION)"
            ),
            stacklevel=2,
        )
    return ServedScorer(
        name=f"vqa:{endpoint.shown}#{model}",
        client=client,
        model=model,
        revision=endpoint.revision,
        prompt=options.vqa,
    )


def _api_key(variable: str | None) -> str | None:
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ServedError(
            f"--vl-api-key-env names {variable}, which is not set; expected the environment "
            "variable that holds the server's API key"
        )
    return key


def _served_model(client: Client, endpoint: Endpoint) -> str:
    """The model id every replica lists: the one named, else the only one listed."""
    chosen = endpoint.model or ""
    for replica in endpoint.replicas:
        listing = client.get("/models", replica)
        data = listing.get("data") if isinstance(listing, dict) else None
        ids = [str(item.get("id")) for item in data or [] if isinstance(item, dict)]
        if not chosen and len(ids) != 1:
            raise ServedError(
                f"server {replica.base} serves {len(ids)} models ({', '.join(ids) or 'none'}); "
                "expected #MODEL naming the one to test"
            )
        chosen = chosen or ids[0]
        if chosen not in ids:
            raise ServedError(
                f"server {replica.base} serves no model '{chosen}' (it serves "
                f"{', '.join(ids) or 'none'}); expected #MODEL to be one of its ids"
            )
    return chosen


def identify(body: str, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The fingerprint ``load`` gives, without a request, when the spec names #MODEL."""
    endpoint = parse_endpoint(body)
    if endpoint.model is None:
        return None
    fingerprint = served_fingerprint(endpoint.model, endpoint.revision, options.vqa)
    return ModelIdentity(fingerprint, f"{chat.SCORING_VERSION} {options.vqa.describe()}")
