"""The ``vqa:`` backend's generative methods (``generative.protocol.GenerativeScorer``).

``score_continuations`` teacher-forces each continuation after the rendered prompt, prompt and
continuation tokenised together (``VqaScorer.answer_log_probs``: the continuation's tokens are
those after the prompt's), and sums its tokens' log-probabilities (lm-eval's ``acc``).
``next_token_logprobs`` is that sum for each candidate (for a one-token candidate, the
probability of that token at the answer position). ``generate`` is greedy decoding of a batch
padded on the left, so every prompt ends at the last position and a batched answer equals
the unbatched one.

In the chat form the answer starts as the model's own would after the generation prompt
(``VqaScorer.answer_text``: the chat template's separator, LLaVA's space after ``ASSISTANT:``,
nothing after Qwen2-VL's ``assistant\\n``); PaliGemma's prefix form takes it as its suffix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image


class GenerativeMethods:
    """Mixed into ``VqaScorer``: it provides the processor, model, tokenizer, prompt form,
    ``chat_prompt``, ``answer_log_probs``, ``forward_context`` and ``batch_size``."""

    processor: Any
    model: Any
    tokenizer: Any
    suffix_form: bool
    batch_size: int
    device: str
    forward_context: Any

    if TYPE_CHECKING:  # VqaScorer's own

        def chat_prompt(self, question: str) -> str: ...

        def answer_text(self, answer: str) -> str: ...

        def answer_log_probs(self, images: list[Image], asked: list[tuple[str, str]]) -> Any: ...

        def _on_device(self, tensor: Any) -> Any: ...

    def rendered_prompt(self, prompt: str) -> str:
        """The text sent to the processor for ``prompt`` (its image token included)."""
        if self.suffix_form:
            return str(getattr(self.processor, "image_token", "")) + prompt
        return self.chat_prompt(prompt)

    def score_continuations(
        self, images: list[Image], prompts: list[str], continuations: list[str]
    ) -> np.ndarray:
        """The summed log-probability of each continuation's tokens, fp32 [len(images)]."""
        from pytest_vlcheck.models.batching import run_in_batches, to_float32_numpy

        rows = list(zip(images, prompts, continuations, strict=True))

        def forward(batch: Sequence[tuple[Image, str, str]]) -> np.ndarray:
            asked = [(prompt, self._answer(text)) for _, prompt, text in batch]
            sums, _ = self.answer_log_probs([image for image, _, _ in batch], asked)
            return to_float32_numpy(sums)

        with self.forward_context():
            return run_in_batches(rows, self, forward)

    def next_token_logprobs(
        self, images: list[Image], prompts: list[str], candidates: list[str]
    ) -> np.ndarray:
        """Each candidate's log-probability as the answer, fp32 [len(images), candidates]."""
        k = len(candidates)
        flat = self.score_continuations(
            [image for image in images for _ in range(k)],
            [prompt for prompt in prompts for _ in range(k)],
            [candidate for _ in prompts for candidate in candidates],
        )
        return flat.reshape(len(images), k)

    def generate(self, images: list[Image], prompts: list[str], max_new_tokens: int) -> list[str]:
        """Greedy answers (special tokens dropped, surrounding space stripped)."""
        out: list[str] = []
        with self.forward_context():
            for start in range(0, len(images), max(1, int(self.batch_size))):
                end = start + max(1, int(self.batch_size))
                out += self._generate(images[start:end], prompts[start:end], max_new_tokens)
        return out

    def _generate(self, images: list[Image], prompts: list[str], max_new_tokens: int) -> list[str]:
        inputs = self.processor(
            images=images,
            text=[self.rendered_prompt(prompt) for prompt in prompts],
            padding=True,
            padding_side="left",
            return_tensors="pt",
        )
        width = inputs["input_ids"].shape[1]
        tokens = self.model.generate(
            **{k: self._on_device(v) for k, v in inputs.items()},
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        texts = self.tokenizer.batch_decode(tokens[:, width:].cpu(), skip_special_tokens=True)
        return [text.strip() for text in texts]

    def _answer(self, answer: str) -> str:
        """``answer`` as it follows the rendered prompt (see the module docstring)."""
        return answer if self.suffix_form else self.answer_text(answer)
