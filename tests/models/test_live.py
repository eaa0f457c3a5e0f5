"""Live models (``models.live``): a caller's model object scored as it trains, left untouched."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import build_hf_clip, build_hf_siglip
from PIL import Image

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.backends import hf as hf_backend
from pytest_vlcheck.models.backends import open_clip as open_clip_backend
from pytest_vlcheck.models.live.fingerprint import (
    CHUNK,
    HOST_SLICE,
    _keys,
    _slice_digests,
    _tensor_sums,
    weights_checksum,
)
from pytest_vlcheck.models.live.scorer import LiveSigmoidScorer, live_scorer
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_SPEC

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

CPU = ModelOptions(device="cpu", batch_size=4)
TEXTS = ["a red circle", "two blue squares", "a green triangle above a square"]


def _images(count: int = 5, size: int = 40) -> list[Image.Image]:
    rng = np.random.default_rng(7)
    return [
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(count)
    ]


def _tiny_open_clip(seed: int = 0):
    """A random-weight model of the bundled tiny architecture (a ResNet tower: BatchNorm)."""
    config = json.loads(Path(TINY_CONFIG).read_text(encoding="utf-8"))
    torch.manual_seed(seed)
    model = open_clip.CLIP(**config)
    preprocess = open_clip.image_transform(config["vision_cfg"]["image_size"], is_train=False)
    tokenizer = open_clip.tokenizer.SimpleTokenizer(context_length=32)
    return model, preprocess, tokenizer


@pytest.fixture(scope="module")
def tiny_spec():
    return open_clip_backend.load(TINY_SPEC.removeprefix("open_clip:"), CPU)


@pytest.fixture
def tiny_live(tiny_spec):
    """The spec-loaded tiny weights in a fresh model object that a caller trains."""
    model, preprocess, tokenizer = _tiny_open_clip()
    model.load_state_dict(tiny_spec.model.state_dict())
    return model, preprocess, tokenizer


def _flags(model) -> list[bool]:
    return [module.training for module in model.modules()]


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {key: value.detach().clone() for key, value in model.state_dict().items()}


def test_open_clip_live_embeddings_equal_the_spec_backends_in_eval_mode(tiny_spec, tiny_live):
    model, preprocess, tokenizer = tiny_live
    model.train()  # BatchNorm on batch statistics would change every embedding
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    images = _images()
    np.testing.assert_allclose(
        scorer.encode_images(images), tiny_spec.encode_images(images), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        scorer.encode_texts(TEXTS), tiny_spec.encode_texts(TEXTS), rtol=1e-5, atol=1e-6
    )
    pixels = [scorer.preprocess_image(image) for image in images]
    np.testing.assert_array_equal(scorer.encode_preprocessed(pixels), scorer.encode_images(images))
    assert scorer.name == "live:CLIP"


_COCA = {
    "embed_dim": 32,
    "vision_cfg": {
        "image_size": 32,
        "layers": 1,
        "width": 32,
        "head_width": 16,
        "patch_size": 8,
        "attentional_pool": True,
        "attn_pooler_heads": 2,
        "output_tokens": True,
    },
    "text_cfg": {
        "context_length": 16,
        "vocab_size": 49408,
        "width": 32,
        "heads": 2,
        "layers": 1,
        "embed_cls": True,
        "output_tokens": True,
    },
    "multimodal_cfg": {
        "context_length": 16,
        "vocab_size": 49408,
        "width": 32,
        "heads": 2,
        "layers": 1,
    },
}


@pytest.mark.parametrize("kind", ["CustomTextCLIP", "CoCa"])
def test_other_open_clip_model_classes_score_like_their_own_encoders(kind):
    torch.manual_seed(0)
    if kind == "CoCa":
        model, size, context = open_clip.CoCa(**_COCA), 32, 16
    else:
        config = json.loads(Path(TINY_CONFIG).read_text(encoding="utf-8"))
        model, size, context = open_clip.CustomTextCLIP(**config), 96, 32
    preprocess = open_clip.image_transform(size, is_train=False)
    tokenizer = open_clip.tokenizer.SimpleTokenizer(context_length=context)
    model.train()
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    images = _images(3)
    got_images, got_texts = scorer.encode_images(images), scorer.encode_texts(TEXTS)
    assert scorer.name == f"live:{kind}" and model.training
    model.eval()
    with torch.no_grad():
        own_images = model.encode_image(torch.stack([preprocess(image) for image in images]))
        own_texts = model.encode_text(tokenizer(TEXTS))
    np.testing.assert_allclose(got_images, own_images.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_texts, own_texts.numpy(), rtol=1e-5, atol=1e-6)


def test_a_call_runs_without_gradients_and_restores_every_modules_flag(tiny_live):
    model, preprocess, tokenizer = tiny_live
    model.train()
    model.visual.layer1.eval()  # a frozen block inside a model in training
    before = _flags(model)
    seen: list[tuple[bool, bool, bool]] = []

    def record(module, inputs, output):
        seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled(), module.training))

    handle = model.visual.register_forward_hook(record)
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    scorer.encode_images(_images(2))
    handle.remove()
    assert seen == [(False, False, False)]  # no_grad (not inference_mode), in eval mode
    assert _flags(model) == before
    assert model.training and not model.visual.layer1.training and model.visual.layer2.training


def test_weights_buffers_gradients_and_rng_states_are_untouched(tiny_live):
    model, preprocess, tokenizer = tiny_live
    model.train()
    image = torch.stack([preprocess(img) for img in _images(2)])
    model.encode_image(image).sum().backward()  # gradients and BatchNorm statistics exist
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    assert grads
    state = _snapshot(model)
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    rng = (torch.get_rng_state(), random.getstate(), np.random.get_state())

    def draw(module, inputs):  # a forward that uses every generator (noise, sampling)
        torch.rand(1), random.random(), np.random.rand()

    model.visual.register_forward_pre_hook(draw)
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    scorer.encode_images(_images(3))
    scorer.encode_texts(TEXTS)
    _ = scorer.fingerprint

    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key  # running_mean/var included
    for name, parameter in model.named_parameters():
        if name in grads:
            assert torch.equal(parameter.grad, grads[name]), name
        else:
            assert parameter.grad is None, name
    assert torch.equal(torch.get_rng_state(), rng[0])
    assert random.getstate() == rng[1]
    after = np.random.get_state()
    assert after[0] == rng[2][0] and np.array_equal(after[1], rng[2][1]) and after[2] == rng[2][2]


def test_the_model_keeps_its_dtype_and_inputs_are_cast_to_it(tiny_live):
    model, preprocess, tokenizer = tiny_live
    model.to(torch.bfloat16)
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    embeddings = scorer.encode_images(_images(2))
    assert embeddings.dtype == np.float32 and np.isfinite(embeddings).all()
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert {p.device.type for p in model.parameters()} == {"cpu"}


def test_a_lower_precision_runs_on_a_cast_copy_without_casting_the_model(tiny_spec, tiny_live):
    model, preprocess, tokenizer = tiny_live
    options = ModelOptions(device="cpu", batch_size=4, precision="bf16")
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=options)
    low = scorer.encode_texts(TEXTS)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    full = tiny_spec.encode_texts(TEXTS)
    assert not np.array_equal(low, full)  # bf16 arithmetic ran
    cosine = (low * full).sum(1) / np.linalg.norm(low, axis=1) / np.linalg.norm(full, axis=1)
    assert cosine.min() > 0.99
    assert (
        scorer.fingerprint
        != live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU).fingerprint
    )


def test_the_fingerprint_follows_optimizer_steps_load_state_dict_and_data_writes(tiny_live):
    model, preprocess, tokenizer = tiny_live
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    seen = [scorer.fingerprint]
    assert seen[0] == scorer.fingerprint  # unchanged weights: the same fingerprint
    assert seen[0].startswith("live:") and len(seen[0]) == len("live:") + 64

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    model.encode_text(tokenizer(TEXTS)).sum().backward()
    optimizer.step()
    seen.append(scorer.fingerprint)

    other, _, _ = _tiny_open_clip(seed=5)
    model.load_state_dict(other.state_dict())
    seen.append(scorer.fingerprint)

    with torch.no_grad():
        weight = model.text_projection
        flipped = weight.data.clone()
        flipped[3, 4] = -flipped[3, 4]  # one sign bit
        weight.data = flipped
    seen.append(scorer.fingerprint)
    model.visual.conv1.weight.data[0, 0, 0, 0] += 1.0  # in place, past the version counter
    seen.append(scorer.fingerprint)
    assert len(set(seen)) == len(seen)


def test_same_weights_in_another_model_object_give_the_same_fingerprint(tiny_spec, tiny_live):
    model, preprocess, tokenizer = tiny_live
    again, _, _ = _tiny_open_clip(seed=3)
    again.load_state_dict(model.state_dict())
    first = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    second = live_scorer(again, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    assert first.fingerprint == second.fingerprint
    assert first.fingerprint != tiny_spec.fingerprint


def test_the_fingerprint_names_the_architecture_and_the_preprocessing(tiny_live):
    model, preprocess, tokenizer = tiny_live
    config = json.loads(Path(TINY_CONFIG).read_text(encoding="utf-8"))
    quick = open_clip.CLIP(**config, quick_gelu=True)  # the same tensors, another activation
    quick.load_state_dict(model.state_dict())
    smaller = open_clip.image_transform(64, is_train=False)
    shorter = open_clip.tokenizer.SimpleTokenizer(context_length=16)
    fingerprints = {
        live_scorer(m, preprocess=p, tokenizer=t, options=CPU).fingerprint
        for m, p, t in [
            (model, preprocess, tokenizer),
            (quick, preprocess, tokenizer),
            (model, smaller, tokenizer),
            (model, preprocess, shorter),
        ]
    }
    assert len(fingerprints) == 4


def test_the_keyed_sums_are_exact_wrapped_integer_arithmetic():
    values = torch.randn(CHUNK + 5)  # two chunks
    words = values.view(torch.int32).tolist()
    keys = _keys(torch.device("cpu")).tolist()

    def wrapped(number: int) -> int:
        number %= 2**64
        return number - 2**64 if number >= 2**63 else number

    expected = []
    for start in (0, CHUNK):
        chunk = words[start : start + CHUNK]
        for row in keys:
            expected.append(wrapped(sum(w * k for w, k in zip(chunk, row, strict=False))))
    assert _tensor_sums(values).tolist() == expected


def test_cpu_bytes_are_hashed_slice_by_slice_in_order():
    import hashlib

    data = np.random.default_rng(1).integers(0, 256, HOST_SLICE + 10, dtype=np.uint8)
    small = np.arange(7, dtype=np.uint8)
    expected = [hashlib.sha256(part).digest() for part in (data[:HOST_SLICE], data[HOST_SLICE:])]
    assert _slice_digests([data, small]) == [*expected, hashlib.sha256(small).digest()]


def test_a_change_past_the_first_slice_of_a_large_tensor_changes_the_checksum():
    layer = torch.nn.Linear(2048, 2600, bias=False)  # 21 MB: two slices
    before = weights_checksum(layer)
    with torch.no_grad():
        layer.weight.data[-1, -1] = -layer.weight.data[-1, -1]
    assert weights_checksum(layer) != before


def test_bytes_that_are_not_whole_words_are_summed_too():
    flags = torch.tensor([True, False, True])
    other = torch.tensor([True, True, True])
    assert _tensor_sums(flags).tolist() != _tensor_sums(other).tolist()


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("live-hf")
    return build_hf_clip(root / "clip"), build_hf_siglip(root / "siglip")


def _processor(directory: Path):
    from transformers import AutoProcessor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoProcessor.from_pretrained(directory, backend="pil")


def test_transformers_clip_live_embeddings_equal_the_spec_backends(hf_dirs):
    spec = hf_backend.load(str(hf_dirs[0]), CPU)
    from transformers import CLIPModel

    model = CLIPModel.from_pretrained(hf_dirs[0])
    model.train()
    scorer = live_scorer(model, preprocess=_processor(hf_dirs[0]), options=CPU)
    images = _images()
    np.testing.assert_allclose(
        scorer.encode_images(images), spec.encode_images(images), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        scorer.encode_texts(TEXTS), spec.encode_texts(TEXTS), rtol=1e-5, atol=1e-6
    )
    assert model.training and not hasattr(scorer, "match_probability")


def test_transformers_siglip_pads_to_its_context_and_reads_its_current_calibration(hf_dirs):
    spec = hf_backend.load(str(hf_dirs[1]), CPU)
    from transformers import SiglipModel

    model = SiglipModel.from_pretrained(hf_dirs[1])
    scorer = live_scorer(model, preprocess=_processor(hf_dirs[1]), options=CPU)
    assert isinstance(scorer, LiveSigmoidScorer)
    np.testing.assert_allclose(
        scorer.encode_texts(TEXTS), spec.encode_texts(TEXTS), rtol=1e-5, atol=1e-6
    )
    similarities = np.array([-0.5, 0.0, 0.7], dtype=np.float32)
    np.testing.assert_allclose(
        scorer.match_probability(similarities), spec.match_probability(similarities), rtol=1e-6
    )
    before = scorer.fingerprint
    with torch.no_grad():
        model.logit_bias.fill_(1.0)
    scale = float(model.logit_scale.detach().exp())
    expected = 1 / (1 + np.exp(-(scale * similarities.astype(np.float64) + 1.0)))
    np.testing.assert_allclose(scorer.match_probability(similarities), expected, rtol=1e-6)
    assert scorer.sigmoid_calibration == pytest.approx((scale, 1.0))
    assert scorer.fingerprint != before


def test_a_live_model_says_where_it_computes(tiny_live):
    """The engine prepares images before each batch for a model on the CPU (the forward pass
    takes every core) and beside it for one on an accelerator: it must know which."""
    from pytest_vlcheck.engine.runner.model_runner import _on_cpu

    model, preprocess, tokenizer = tiny_live
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    assert scorer.device == "cpu" and _on_cpu(scorer)


def test_a_scorer_object_is_returned_as_is():
    class Colours:
        def encode_images(self, images):
            return np.ones((len(images), 3))

        def encode_texts(self, texts):
            return np.ones((len(texts), 3))

    scorer = Colours()
    assert live_scorer(scorer, options=CPU) is scorer
    with pytest.raises(VlcheckUserError, match="already a scorer, so it takes no preprocess="):
        live_scorer(scorer, preprocess=lambda image: image, options=CPU)


@pytest.mark.parametrize("thing", [object(), "open_clip:ViT-B-32", torch.nn.Linear(2, 2)])
def test_anything_else_is_one_user_error_saying_what_is_expected(thing):
    with pytest.raises(VlcheckUserError, match="cannot be scored; expected an open_clip model"):
        live_scorer(thing, options=CPU)


def test_a_wrapped_model_is_refused_naming_the_module_to_pass(tiny_live):
    model, preprocess, tokenizer = tiny_live
    with pytest.raises(
        VlcheckUserError, match=r"a DataParallel object cannot be scored \(it wraps one"
    ):
        live_scorer(
            torch.nn.DataParallel(model), preprocess=preprocess, tokenizer=tokenizer, options=CPU
        )


def test_a_live_model_without_its_preprocessing_is_a_user_error(tiny_live, hf_dirs):
    model, preprocess, _ = tiny_live
    with pytest.raises(
        VlcheckUserError,
        match=r"needs preprocess= and tokenizer= \(missing or not callable: tokenizer\)",
    ):
        live_scorer(model, preprocess=preprocess, options=CPU)
    from transformers import CLIPModel

    clip = CLIPModel.from_pretrained(hf_dirs[0])
    with pytest.raises(VlcheckUserError, match="needs preprocess= its processor"):
        live_scorer(clip, options=CPU)
    with pytest.raises(VlcheckUserError, match="needs preprocess= its processor"):
        live_scorer(clip, preprocess=preprocess, tokenizer=lambda texts: texts, options=CPU)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_model_on_the_gpu_stays_there_and_is_fingerprinted_on_it(tiny_spec, tiny_live):
    model, preprocess, tokenizer = tiny_live
    model.to("cuda")
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    np.testing.assert_allclose(
        scorer.encode_texts(TEXTS), tiny_spec.encode_texts(TEXTS), rtol=1e-3, atol=1e-4
    )
    assert {p.device.type for p in model.parameters()} == {"cuda"}
    before = scorer.fingerprint
    with torch.no_grad():
        model.text_projection.data[0, 0] += 1.0
    assert scorer.fingerprint != before
