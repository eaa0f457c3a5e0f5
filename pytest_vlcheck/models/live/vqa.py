"""A caller's generative VLM (LLaVA, Qwen2-VL, PaliGemma, ...) scored live by ``evaluate``.

The same ``VqaScorer`` as ``vqa:`` specs, entered with the live guard (``models.live``): the
model is never moved or cast, its train/eval flags and the RNG states are restored, and its
fingerprint is read from its current weights at each access, so a changed model is scored
afresh. torch and transformers are imported by the caller's model already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.backends.vqa import VqaScorer, prompt_form
from pytest_vlcheck.models.live.check import check_processor_pixels
from pytest_vlcheck.models.live.identity import live_fingerprint, live_identity
from pytest_vlcheck.models.live.placement import place
from pytest_vlcheck.models.protocol import ModelOptions

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image


class LiveVqaScorer:
    """A caller's generative model behind the pair-scorer protocol and the generative methods."""

    match_is_exp = True

    def __init__(self, scorer: VqaScorer, model: Any, identity: str) -> None:
        self.scorer = scorer
        self.model = model
        self.identity = identity  # architecture, precision, processor, prompt

    @property
    def name(self) -> str:
        """``live:<model class>``."""
        return self.scorer.name

    @property
    def fingerprint(self) -> str:
        """Changes with every change to the weights, buffers, processor or prompt."""
        return live_fingerprint(self.identity, self.model)

    def score_pairs(self, images: list[Image], texts: list[str]) -> np.ndarray:
        """The mean log-probability of each pair's answer tokens (``VqaScorer``)."""
        return self.scorer.score_pairs(images, texts)

    def match_probability(self, scores: np.ndarray) -> np.ndarray:
        """exp(mean log-probability)."""
        return self.scorer.match_probability(scores)

    def describe_answer(self) -> str:
        """How a pair's answer is scored (``VqaScorer.describe_answer``)."""
        return self.scorer.describe_answer()

    def score_continuations(
        self, images: list[Image], prompts: list[str], continuations: list[str]
    ) -> np.ndarray:
        """The generative kinds' methods (``models.generative``), under the same guard."""
        return self.scorer.score_continuations(images, prompts, continuations)

    def next_token_logprobs(
        self, images: list[Image], prompts: list[str], candidates: list[str]
    ) -> np.ndarray:
        return self.scorer.next_token_logprobs(images, prompts, candidates)

    def generate(self, images: list[Image], prompts: list[str], max_new_tokens: int) -> list[str]:
        return self.scorer.generate(images, prompts, max_new_tokens)

    def rendered_prompt(self, prompt: str) -> str:
        """The prompt as the model reads it (what samples.jsonl records)."""
        return self.scorer.rendered_prompt(prompt)


def live_vqa_scorer(
    model: Any, preprocess: Any, tokenizer: Any, options: ModelOptions
) -> LiveVqaScorer:
    """The live scorer of an image-text-to-text model with ``preprocess=`` its processor."""
    where = f"model: a transformers {type(model).__name__}"
    if tokenizer is not None or preprocess is None or not callable(preprocess):
        raise VlcheckUserError(
            f"{where} needs preprocess= its processor (AutoProcessor.from_pretrained(...), "
            "holding the image processor, the tokenizer and the chat template) and no "
            "tokenizer=; expected preprocess=processor"
        )
    if getattr(preprocess, "tokenizer", None) is None:
        is_tokenizer = callable(getattr(preprocess, "convert_tokens_to_ids", None))
        what = "a tokenizer, not the processor" if is_tokenizer else "not a processor"
        raise VlcheckUserError(
            f"{where}: preprocess= is a {type(preprocess).__name__}, {what} (the model needs "
            "the image processor, the tokenizer and the chat template together); expected "
            "preprocess= the processor itself (AutoProcessor.from_pretrained(...)), not "
            "processor.tokenizer"
        )
    prompt_form(preprocess, where)
    config = getattr(model, "config", None)
    if isinstance(getattr(getattr(config, "vision_config", None), "image_size", None), int):
        # a fixed-size vision tower (LLaVA, PaliGemma); Qwen2-VL's takes patches of any size
        check_processor_pixels(config, getattr(preprocess, "image_processor", preprocess))
    options.vqa.check(("vqa_question", "vqa_answer", "vqa_mode", "vqa_preset"))
    placement = place(model, options)  # a cast copy when the precision is lower
    scorer = VqaScorer(
        **placement.encoder(f"live:{type(model).__name__}"),
        processor=preprocess,
        prompt=options.vqa,
        dtype=placement.dtype,
    )
    scorer.check_prompt()
    config_text = config.to_json_string() if config is not None else ""
    template = str(getattr(preprocess, "chat_template", "") or "")
    identity = live_identity(
        model, placement.precision, preprocess, config_text, template, options.vqa.describe()
    )
    return LiveVqaScorer(scorer, model, identity)
