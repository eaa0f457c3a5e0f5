"""A live model's ``preprocess`` and ``tokenizer`` are tried on one tiny input before any
scoring: a mismatch is one ``SettingsError`` naming the argument, raised by ``evaluate``."""

from __future__ import annotations

import warnings
from pathlib import Path

import open_clip
import pytest
from helpers.model_builders import build_hf_clip

from pytest_vlcheck import SettingsError, evaluate
from pytest_vlcheck.models.live.check import check_live_inputs
from pytest_vlcheck.tiny import live_model

CHECKLIST = Path(__file__).resolve().parents[2] / "checklists" / "counting.yaml"


@pytest.fixture(scope="module")
def tiny() -> tuple:
    return live_model()


def _message(model, preprocess, tokenizer) -> str:
    with pytest.raises(SettingsError) as caught:
        evaluate(model, CHECKLIST, preprocess=preprocess, tokenizer=tokenizer, no_cache=True)
    return str(caught.value)


def test_another_models_context_length_names_the_tokenizer(tiny: tuple) -> None:
    model, preprocess, _ = tiny
    message = _message(model, preprocess, open_clip.get_tokenizer("ViT-B-32"))
    assert message.startswith(
        "tokenizer: gives 77 tokens per text but the model's text context is 32; expected "
    )
    assert "SimpleTokenizer(context_length=32)" in message


def test_swapped_arguments_are_named_both(tiny: tuple) -> None:
    model, preprocess, tokenizer = tiny
    assert _message(model, tokenizer, preprocess).startswith("preprocess/tokenizer: swapped: ")


def test_a_tokenizer_of_the_wrong_type(tiny: tuple) -> None:
    model, preprocess, _ = tiny
    message = _message(model, preprocess, lambda texts: [[1, 2] for _ in texts])
    assert message.startswith("tokenizer: called on ['a photo'] it returned a list; expected ")
    message = _message(model, preprocess, preprocess)
    assert message.startswith("tokenizer: called on ['a photo'] it raised TypeError: ")


def test_a_preprocess_of_another_image_size(tiny: tuple) -> None:
    model, _, tokenizer = tiny
    other = open_clip.image_transform(224, is_train=False)
    assert _message(model, other, tokenizer) == (
        "preprocess: gives 224 x 224 images but the model takes 96 x 96; expected the model's "
        "eval transform"
    )
    message = _message(model, lambda image: image, tokenizer)
    assert message.startswith("preprocess: called on a PIL image it returned a Image; expected")


def test_the_right_pair_is_checked_once_per_model_preprocess_and_tokenizer(tiny: tuple) -> None:
    model, preprocess, tokenizer = tiny
    calls = []

    def counting(texts):
        calls.append(texts)
        return tokenizer(texts)

    check_live_inputs(model, preprocess, counting)
    check_live_inputs(model, preprocess, counting)
    assert calls == [["a photo"]]
    check_live_inputs(model, preprocess, lambda texts: counting(texts))  # another tokenizer
    assert len(calls) == 2


def test_a_transformers_tokenizer_longer_than_the_position_table(tmp_path: Path) -> None:
    from transformers import AutoProcessor, CLIPModel

    directory = build_hf_clip(tmp_path / "clip")
    model = CLIPModel.from_pretrained(directory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        processor = AutoProcessor.from_pretrained(directory, backend="pil")
        other = AutoProcessor.from_pretrained(directory, backend="pil")
    check_live_inputs(model, processor, None)  # its own processor fits
    positions = model.config.text_config.max_position_embeddings
    other.tokenizer.model_max_length = positions + 13  # another model's tokenizer
    with pytest.raises(
        SettingsError, match=rf"^tokenizer: its model_max_length is {positions + 13} "
    ):
        check_live_inputs(model, other, None)
