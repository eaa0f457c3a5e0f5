"""``tiny-vlm``'s architecture, tokenizer and processor: stock transformers classes only, so the
saved folder loads with ``AutoModelForImageTextToText`` / ``AutoProcessor`` like any LLaVA.

A ``LlavaForConditionalGeneration``: a small CLIP ViT (96 px, 16-px patches: 36 image tokens)
whose last layer's patch features go through LLaVA's two-layer projector into a small Llama
decoder. The tokenizer is word-level (``tokenizers`` WordLevel, split on whitespace and
punctuation), its vocabulary the words of the training texts, so every trained word is one
token and an answer (``Yes``, ``3``, ``red``, ``A``) is exactly one token before ``</s>``.
The chat template is LLaVA-1.5's: ``USER: <image>\\n{prompt} ASSISTANT:`` and the answer after
one space.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IMAGE_SIZE = 96
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>", "<image>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}USER: "
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image>\n"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %} "
    "{% else %}ASSISTANT: {{ message['content'][0]['text'] }}</s>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
CHAT_WORDS = ("USER", "ASSISTANT", ":")
"""The template's own words (the vocabulary must hold them)."""


@dataclass(frozen=True)
class Sizes:
    """The architecture's free sizes (the defaults are the shipped model's)."""

    vision_width: int = 96
    vision_layers: int = 3
    text_width: int = 128
    text_layers: int = 2
    heads: int = 4
    patch: int = 16

    @property
    def grid(self) -> int:
        """Patches per side (the image tokens are ``grid`` squared)."""
        return IMAGE_SIZE // self.patch


def word_split(text: str) -> list[str]:
    """The tokenizer's pre-tokenisation of ``text`` (whitespace, then each punctuation mark
    alone): what the vocabulary is made of."""
    return [w for w, _ in _pre_tokenizer().pre_tokenize_str(text)]


def _pre_tokenizer() -> Any:
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation("isolated")]
    )


def build_tokenizer(words: Iterable[str]) -> Any:
    """A word-level fast tokenizer over ``words`` (sorted; special tokens first, whole), BOS
    ``<s>`` prepended, unknown words as ``<unk>``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS)}
    for word in sorted(set(words) | set(CHAT_WORDS)):
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = _pre_tokenizer()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B:1", special_tokens=[("<s>", vocab["<s>"])]
    )
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=256,
    )


def build(words: Iterable[str], sizes: Sizes = Sizes()) -> tuple[Any, Any]:
    """(model, processor): a LLaVA of ``sizes`` initialised from the current torch seed, and
    its processor (word-level tokenizer over ``words``, CLIP image processor, chat template)."""
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = build_tokenizer(words)
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=sizes.text_width,
        intermediate_size=4 * sizes.text_width,
        num_hidden_layers=sizes.text_layers,
        num_attention_heads=sizes.heads,
        num_key_value_heads=sizes.heads,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    vision = CLIPVisionConfig(
        hidden_size=sizes.vision_width,
        intermediate_size=4 * sizes.vision_width,
        num_hidden_layers=sizes.vision_layers,
        num_attention_heads=sizes.heads,
        image_size=IMAGE_SIZE,
        patch_size=sizes.patch,
        projection_dim=sizes.vision_width,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        tie_word_embeddings=True,
    )
    model = LlavaForConditionalGeneration(config)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=sizes.patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    return model, processor


def save(model: Any, processor: Any, folder: Path) -> None:
    """The model in fp16 storage and its processor, as ``save_pretrained`` writes them."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(folder)
    model.to(torch.float16).save_pretrained(folder)
    model.to(torch.float32)
