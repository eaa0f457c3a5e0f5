"""``--vl-vqa-preset t2v``: t2v_metrics' LLaVA-1.5 VQAScore (its version 3.0, the last with a
LLaVA scorer) on a transformers LLaVA checkpoint, step by step as that scorer does it:

- the prompt is its own conversation, not the checkpoint's chat template: the system message,
  `` USER: ``, the image, ``\\n``, the question, `` ASSISTANT: `` (a trailing space), then the
  answer and the end-of-sequence token's text;
- the text is split at the image token and each piece tokenised on its own with the
  tokenizer's special tokens, the later pieces' BOS dropped (a SentencePiece tokenizer then
  starts the piece after the image with an extra ``▁``); the image's tokens go between the
  pieces (as many as its features: transformers' LLaVA expects them expanded);
- the scored tokens start one token before the end of the prompt's own tokenisation (its
  trailing space is a token of its own there, merged into the answer's first token in the
  whole), so they are the answer's and the end-of-sequence token;
- each image is padded to a square of the image processor's mean colour (each channel
  ``int(mean * 255)``), centred, before the image processor;
- the score is the mean log-probability of the scored tokens (t2v_metrics reports its exp).

PIL for the padding; torch is imported inside ``t2v_inputs`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import ModelLoadError

if TYPE_CHECKING:
    from PIL.Image import Image

SYSTEM_MESSAGE = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
"""LLaVA-1.5's system message, which t2v_metrics puts before every prompt."""
IMAGE_TEXT = "<image>"
"""Where the image goes in t2v_metrics' prompt (split away before tokenising)."""

T2V_MODEL_TYPES = frozenset({"llava"})
"""The config ``model_type`` the preset reproduces (t2v_metrics' LLaVA-1.5 scorer)."""


def check_t2v_model(model_type: str, where: str) -> None:
    """One line when the preset is asked of a model that is not a LLaVA(-1.5)."""
    if model_type not in T2V_MODEL_TYPES:
        raise ModelLoadError(
            f"{where}: --vl-vqa-preset t2v reproduces t2v_metrics' LLaVA-1.5 scorer, but this "
            f"is a '{model_type}' model; expected a LLaVA model (model_type 'llava'), or no "
            "preset"
        )


def t2v_prompt(question: str) -> str:
    """The prompt before the answer, as t2v_metrics' LLaVA-1.5 scorer writes it."""
    return f"{SYSTEM_MESSAGE} USER: {IMAGE_TEXT}\n{question} ASSISTANT: "


def t2v_ids(tokenizer: Any, text: str, image_ids: list[int]) -> list[int]:
    """``text`` split at the image, each piece tokenised alone (special tokens added), the
    pieces joined by ``image_ids``, the BOS of every piece but the first dropped."""
    pieces = [list(tokenizer(piece)["input_ids"]) for piece in text.split(IMAGE_TEXT)]
    bos = tokenizer.bos_token_id
    skip = 1 if pieces[0] and bos is not None and pieces[0][0] == bos else 0
    ids = pieces[0][:skip]
    for index, piece in enumerate(pieces):
        if index:
            ids += image_ids
        ids += piece[skip:]
    return ids


def t2v_row(
    tokenizer: Any, question: str, answer: str, image_ids: list[int]
) -> tuple[list[int], int]:
    """One pair's ids and how many of its last ids are scored."""
    prompt = t2v_prompt(question)
    eos = str(tokenizer.eos_token or "")
    ids = t2v_ids(tokenizer, prompt + answer + eos, image_ids)
    prompt_length = len(t2v_ids(tokenizer, prompt, image_ids)) - 1  # the space
    if len(ids) <= prompt_length:
        raise ModelLoadError(
            f"the answer {answer!r} tokenises to nothing after t2v_metrics' prompt; expected an "
            "answer with at least one token"
        )
    return ids, len(ids) - prompt_length


def pad_to_square(image: Image, mean: Any) -> Image:
    """``image`` centred on a square of its longer side, the rest ``int(m * 255)`` of each
    channel's mean (t2v_metrics' ``pad`` aspect ratio for LLaVA-1.5)."""
    from PIL import Image as PILImage

    image = image if image.mode == "RGB" else image.convert("RGB")
    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    colour = tuple(int(m * 255) for m in mean)
    square = PILImage.new(image.mode, (side, side), colour)
    square.paste(image, ((side - width) // 2, (side - height) // 2))
    return square


def padded_squares(images: list[Image], mean: Any) -> list[Image]:
    """Each image padded to a square (``pad_to_square``), once per image object, so that the
    pairs on one image still share its vision features."""
    squares: dict[int, Image] = {}
    for image in images:
        if id(image) not in squares:
            squares[id(image)] = pad_to_square(image, mean)
    return [squares[id(image)] for image in images]


def expanded_image_ids(processor: Any, image: Image) -> list[int]:
    """The image's tokens as the processor expands them (one per vision feature)."""
    image_token = str(processor.image_token)
    ids = processor(images=[image], text=[image_token])["input_ids"][0]
    image_id = processor.tokenizer.convert_tokens_to_ids(image_token)
    return [int(i) for i in ids if int(i) == image_id]


def t2v_inputs(
    processor: Any, images: list[Image], asked: list[tuple[str, str]], image_ids: list[int]
) -> tuple[dict[str, Any], Any]:
    """The model inputs of (question, answer) rows on ``images`` (padded already): the ids of
    ``t2v_row`` padded on the right (padding masked), the image processor's pixels; and each
    row's number of scored tokens."""
    import torch

    tokenizer = processor.tokenizer
    rows = [t2v_row(tokenizer, question, answer, image_ids) for question, answer in asked]
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), tokenizer.pad_token_id or 0, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for row, (ids, _) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention_mask[row, : len(ids)] = 1
    pixels = processor.image_processor(images=images, return_tensors="pt")
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask, **pixels}
    return inputs, torch.tensor([count for _, count in rows])
