"""Model inputs for training and probing ``tiny-vlm``: the chat prompt, the answer teacher-forced
after it, and labels on the answer's tokens and ``</s>`` only (the prompt and image are not
trained to be predicted)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tiny_training.vlm.questions import Question

IGNORE = -100
"""transformers' label for a position without a loss."""


def chat_prompt(processor: Any, prompt: str) -> str:
    """The chat template's text for one user message [image, prompt] + the generation prompt:
    what the ``vqa:`` backend sends."""
    content = [{"type": "image"}, {"type": "text", "text": prompt}]
    return str(
        processor.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
        )
    )


def image_token_count(processor: Any) -> int:
    """How many tokens the processor expands one image token into (asked, not computed)."""
    from PIL import Image

    size = processor.image_processor.crop_size["height"]
    blank = Image.new("RGB", (size, size))
    ids = processor(images=[blank], text=[processor.image_token])["input_ids"][0]
    return sum(1 for i in ids if i == processor.image_token_id)


class Collator:
    """Turns (pixels, questions) into a right-padded batch with answer-only labels."""

    def __init__(self, processor: Any) -> None:
        import torch

        self.tokenizer = processor.tokenizer
        image = processor.image_processor
        self.mean = torch.tensor(image.image_mean).view(1, 3, 1, 1)
        self.std = torch.tensor(image.image_std).view(1, 3, 1, 1)
        image_token = processor.image_token
        self.expanded = image_token * image_token_count(processor)
        self.image_token = image_token
        self.processor = processor
        self._prompts: dict[str, list[int]] = {}

    def pixels(self, images: np.ndarray) -> Any:
        """uint8 [n, h, w, 3] at the model's input size -> normalised pixel values (the CLIP
        image processor's rescale and normalise; no resize is needed at that size)."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
        return (x - self.mean) / self.std

    def prompt_ids(self, prompt: str) -> list[int]:
        """The tokens of the chat prompt (image token expanded), BOS first."""
        found = self._prompts.get(prompt)
        if found is None:
            text = chat_prompt(self.processor, prompt).replace(self.image_token, self.expanded)
            found = list(self.tokenizer(text)["input_ids"])
            self._prompts[prompt] = found
        return found

    def __call__(self, images: np.ndarray, questions: Sequence[Question]) -> dict[str, Any]:
        """``input_ids``, ``attention_mask``, ``labels`` and ``pixel_values`` for one batch."""
        return {**self.texts(questions), "pixel_values": self.pixels(images)}

    def texts(self, questions: Sequence[Question]) -> dict[str, Any]:
        """``input_ids``, ``attention_mask`` and ``labels`` for one batch."""
        import torch

        rows, labels = [], []
        for q in questions:
            prompt = self.prompt_ids(q.prompt)
            answer = self.tokenizer(" " + q.answer, add_special_tokens=False)["input_ids"]
            answer = [*answer, self.tokenizer.eos_token_id]
            rows.append(prompt + answer)
            labels.append([IGNORE] * len(prompt) + answer)
        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        target = torch.tensor([t + [IGNORE] * (width - len(t)) for t in labels])
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "labels": target,
        }
