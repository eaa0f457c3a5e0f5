"""Tiny, seeded, offline generative VLMs for the ``vqa:`` backend's tests: LLaVA, Qwen2-VL and
PaliGemma, each saved with ``save_pretrained`` beside a processor built by hand.

The tokenizers are ``tokenizers`` character-level ones over the byte-level alphabet (every
text tokenises, and a prompt's ids are always a prefix of the prompt-plus-answer's), with the
family's special tokens added whole. Weights come from the library's random init under
``torch.manual_seed(seed)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.model_builders import TINY_IMAGE, TINY_PATCH, _quiet_transformers, byte_vocabulary

_TEXT = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "initializer_range": 0.5,  # far from uniform: tiny models then rank texts decisively
}

LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}USER: "
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image>\n"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %} "
    "{% else %}ASSISTANT: {{ message['content'][0]['text'] }}</s>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def char_tokenizer(
    specials: list[str], *, bos: str | None, eos: str, pad: str, **extra: Any
) -> Any:
    """A character-level fast tokenizer: special tokens whole, BOS prepended when given."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = byte_vocabulary([*specials, "<unk>"])
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            pre_tokenizers.Split("", "isolated"),
        ]
    )
    from tokenizers import decoders

    backend.decoder = decoders.ByteLevel()
    if bos is not None:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A",
            pair=f"{bos} $A $B:1",
            special_tokens=[(bos, vocab[bos])],
        )
    else:  # a pair's second text gets token type 1 (PaliGemma's suffix)
        backend.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B:1")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token="<unk>",
        model_max_length=512,
        **extra,
    )


def build_llava(
    dirpath: Path, seed: int = 0, *, width: int = 32, layers: int = 2, image_size: int = TINY_IMAGE
) -> Path:
    """A tiny LlavaForConditionalGeneration (llama text, CLIP vision) with LlavaProcessor;
    ``width``, ``layers`` and ``image_size`` grow it (benchmarks on a GPU)."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    dirpath = Path(dirpath)
    tokenizer = char_tokenizer(
        ["<s>", "</s>", "<pad>", "<image>"], bos="<s>", eos="</s>", pad="<pad>"
    )
    vocab_size = len(tokenizer)
    sized = {**_TEXT, "hidden_size": width, "intermediate_size": 2 * width}
    text = LlamaConfig(
        **{**sized, "num_hidden_layers": layers},
        vocab_size=vocab_size,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    vision = CLIPVisionConfig(
        hidden_size=width,
        intermediate_size=2 * width,
        num_hidden_layers=layers,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=TINY_PATCH,
        projection_dim=width,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    with _quiet_transformers():
        processor = LlavaProcessor(
            image_processor=image_processor,
            tokenizer=tokenizer,
            patch_size=TINY_PATCH,
            vision_feature_select_strategy="default",
            num_additional_image_tokens=1,
            chat_template=LLAVA_TEMPLATE,
        )
        processor.save_pretrained(dirpath)
        model.save_pretrained(dirpath)
    return dirpath


QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif item['type'] == 'text' %}"
    "{{ item['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_qwen2_vl(dirpath: Path, seed: int = 0) -> Path:
    """A tiny Qwen2VLForConditionalGeneration (M-RoPE text, patch-merging vision) with
    Qwen2VLProcessor: image-pad and vision start/end tokens, a chat template, no BOS."""
    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    dirpath = Path(dirpath)
    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    tokenizer = char_tokenizer(specials, bos=None, eos="<|im_end|>", pad="<|endoftext|>")
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in specials}
    text = {
        **_TEXT,
        "vocab_size": len(tokenizer),
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        "bos_token_id": None,
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": 2,
        "embed_dim": 32,
        "hidden_size": 32,
        "num_heads": 2,
        "patch_size": 4,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    config = Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config)
    image_processor = Qwen2VLImageProcessor(
        patch_size=4, merge_size=2, temporal_patch_size=2, min_pixels=16 * 16, max_pixels=32 * 32
    )
    with _quiet_transformers():
        processor = Qwen2VLProcessor(
            image_processor=image_processor,
            tokenizer=tokenizer,
            video_processor=Qwen2VLVideoProcessor(
                patch_size=4, merge_size=2, temporal_patch_size=2
            ),
            chat_template=QWEN_TEMPLATE,
        )
        processor.save_pretrained(dirpath)
        model.save_pretrained(dirpath)
    return dirpath


def build_paligemma(dirpath: Path, seed: int = 0) -> Path:
    """A tiny PaliGemmaForConditionalGeneration (gemma text, SigLIP vision) with
    PaliGemmaProcessor: no chat template; the prompt is a prefix, the answer a ``suffix=``."""
    import torch
    from transformers import (
        GemmaConfig,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
        SiglipVisionConfig,
    )

    dirpath = Path(dirpath)
    tokenizer = char_tokenizer(["<bos>", "<eos>", "<pad>"], bos=None, eos="<eos>", pad="<pad>")
    tokenizer.bos_token = "<bos>"
    image_processor = SiglipImageProcessor(size={"height": TINY_IMAGE, "width": TINY_IMAGE})
    image_processor.image_seq_length = (TINY_IMAGE // TINY_PATCH) ** 2
    with _quiet_transformers():
        processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tokenizer)
    text = GemmaConfig(
        **_TEXT,
        head_dim=16,
        vocab_size=len(processor.tokenizer),
        bos_token_id=processor.tokenizer.convert_tokens_to_ids("<bos>"),
        eos_token_id=processor.tokenizer.eos_token_id,
        pad_token_id=processor.tokenizer.pad_token_id,
    )
    vision = SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=TINY_IMAGE,
        patch_size=TINY_PATCH,
        projection_dim=32,
    )
    config = PaliGemmaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=processor.image_token_id,
        projection_dim=32,
        hidden_size=32,
    )
    torch.manual_seed(seed)
    model = PaliGemmaForConditionalGeneration(config)
    with _quiet_transformers():
        processor.save_pretrained(dirpath)
        model.save_pretrained(dirpath)
    return dirpath
