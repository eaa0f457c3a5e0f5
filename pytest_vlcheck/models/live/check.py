"""A live model's ``preprocess`` and ``tokenizer`` tried on one tiny input before any scoring.

In a training loop a wrong tokenizer (another model's context length) or a swapped pair does
not fail loudly: every test would error with a tensor-size message from deep inside the text
tower, and ``run.passed`` would just be False. One call each on a 16 x 16 image and a
two-word text finds it first and names the argument. Checked once per (model, preprocess,
tokenizer): a training loop that evaluates every N steps pays for it once.
"""

from __future__ import annotations

import weakref
from typing import Any

from pytest_vlcheck.errors import SettingsError

_PROBE_TEXT = ["a photo"]
_UNBOUNDED = 10**6  # tokenizers without a limit report a huge model_max_length
_checked: weakref.WeakKeyDictionary[Any, set[tuple[int, int]]] = weakref.WeakKeyDictionary()


def check_live_inputs(model: Any, preprocess: Any, tokenizer: Any) -> None:
    """Raise ``SettingsError`` naming ``preprocess`` or ``tokenizer`` when either does not
    fit ``model`` (an open_clip or transformers dual encoder; other objects, generative
    models included, are not checked here)."""
    pair = (id(preprocess), id(tokenizer))
    try:
        seen = _checked.setdefault(model, set())
    except TypeError:  # not weakly referenceable: check every time
        seen = set()
    if pair in seen:
        return
    if callable(getattr(model, "encode_image", None)):
        _check_open_clip(model, preprocess, tokenizer)
    elif callable(getattr(model, "get_text_features", None)):  # a dual encoder; generative
        _check_transformers(model, preprocess, tokenizer)  # models check their own processor
    seen.add(pair)


def _probe_image() -> Any:
    from PIL import Image

    return Image.new("RGB", (16, 16), (128, 64, 32))


def _call(function: Any, argument: Any) -> tuple[Any, str | None]:
    """``function(argument)``, or the exception it raised as one short text."""
    try:
        return function(argument), None
    except Exception as exc:  # the user's callable: anything it raises is the finding
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _is_token_ids(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.ndim == 2 and not value.is_floating_point()


def _is_image_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.ndim == 3 and value.is_floating_point()


def _open_clip_size(model: Any) -> tuple[int, int] | None:
    size = getattr(getattr(model, "visual", None), "image_size", None)
    if isinstance(size, int):
        return (size, size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return (int(size[0]), int(size[1]))
    return None


def _open_clip_context(model: Any) -> int | None:
    for owner in (model, getattr(model, "text", None)):
        length = getattr(owner, "context_length", None)
        if isinstance(length, int):
            return length
    return None


def _check_open_clip(model: Any, preprocess: Any, tokenizer: Any) -> None:
    image = _probe_image()
    tokens, token_error = _call(tokenizer, _PROBE_TEXT)
    pixels, pixel_error = _call(preprocess, image)
    if not _is_token_ids(tokens) and not _is_image_tensor(pixels):
        swapped_pixels, _ = _call(tokenizer, image)
        swapped_tokens, _ = _call(preprocess, _PROBE_TEXT)
        if _is_image_tensor(swapped_pixels) and _is_token_ids(swapped_tokens):
            raise SettingsError(
                "preprocess/tokenizer: swapped: preprocess= turns texts into token ids and "
                "tokenizer= turns images into tensors; expected preprocess=the image "
                "transform and tokenizer=the tokenizer"
            )
    if not _is_token_ids(tokens):
        got = token_error or f"returned {_described(tokens)}"
        raise SettingsError(
            f"tokenizer: called on {_PROBE_TEXT!r} it {_raised_or(got)}; expected a "
            "[texts, context] tensor of token ids, as open_clip.get_tokenizer(ARCH) gives"
        )
    context = _open_clip_context(model)
    if context is not None and tokens.shape[1] != context:
        raise SettingsError(
            f"tokenizer: gives {tokens.shape[1]} tokens per text but the model's text context "
            f"is {context}; expected this model's tokenizer: open_clip.get_tokenizer(ARCH) "
            f"of its architecture, or SimpleTokenizer(context_length={context})"
        )
    _check_pixels(pixels, pixel_error, _open_clip_size(model), "the model's eval transform")


def _check_pixels(
    pixels: Any, error: str | None, size: tuple[int, int] | None, expected: str
) -> None:
    if not _is_image_tensor(pixels):
        got = error or f"returned {_described(pixels)}"
        raise SettingsError(
            f"preprocess: called on a PIL image it {_raised_or(got)}; expected a [3, H, W] "
            f"float tensor ({expected})"
        )
    if size is not None and tuple(pixels.shape[-2:]) != size:
        height, width = pixels.shape[-2:]
        raise SettingsError(
            f"preprocess: gives {height} x {width} images but the model takes "
            f"{size[0]} x {size[1]}; expected {expected}"
        )


def _check_transformers(model: Any, preprocess: Any, tokenizer: Any) -> None:
    image_processor = getattr(preprocess, "image_processor", preprocess)
    tokenizer = tokenizer if tokenizer is not None else getattr(preprocess, "tokenizer", None)
    config = getattr(model, "config", None)
    text_config = getattr(config, "text_config", None) or config
    positions = getattr(text_config, "max_position_embeddings", None)
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(positions, int) and isinstance(limit, int) and positions < limit < _UNBOUNDED:
        raise SettingsError(
            f"tokenizer: its model_max_length is {limit} but the model's text config has "
            f"{positions} positions (max_position_embeddings); expected this model's "
            "tokenizer (AutoProcessor.from_pretrained of the same checkpoint)"
        )
    encoded, error = _call(lambda texts: tokenizer(texts, return_tensors="pt"), _PROBE_TEXT)
    ids = encoded.get("input_ids") if hasattr(encoded, "get") else None
    if not _is_token_ids(ids):
        got = error or f"returned {_described(encoded)} without input_ids"
        raise SettingsError(
            f"tokenizer: called on {_PROBE_TEXT!r} it {_raised_or(got)}; expected a "
            "transformers tokenizer of this model"
        )
    check_processor_pixels(config, image_processor)


def check_processor_pixels(config: Any, image_processor: Any) -> None:
    """Raise ``SettingsError`` naming ``preprocess`` when ``image_processor`` (a processor's,
    or one alone) does not make images of the size ``config.vision_config`` takes (a dual
    encoder's or a generative model's: every test would fail in transformers' words)."""
    image = _probe_image()
    batch, error = _call(lambda im: image_processor(images=[im], return_tensors="pt"), image)
    pixels = batch.get("pixel_values") if hasattr(batch, "get") else None
    pixels = pixels[0] if pixels is not None and getattr(pixels, "ndim", 0) == 4 else pixels
    vision_config = getattr(config, "vision_config", None)
    size = getattr(vision_config, "image_size", None)
    _check_pixels(
        pixels,
        error,
        (size, size) if isinstance(size, int) else None,
        "the image processor of this model (AutoProcessor.from_pretrained)",
    )


def _raised_or(got: str) -> str:
    return got if got.startswith("returned") else f"raised {got}"


def _described(value: Any) -> str:
    shape = getattr(value, "shape", None)
    kind = type(value).__name__
    return f"a {kind} of shape {list(shape)}" if shape is not None else f"a {kind}"
