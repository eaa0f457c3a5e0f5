"""open_clip's eval transform kept as uint8 pixels and finished per batch gives the model the
same bits as the whole transform, image by image (what keeps embeddings bit-identical while
the live image store holds a quarter of the bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from pytest_vlcheck.models.pixels.compact import split_transform

open_clip = pytest.importorskip("open_clip")


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    sizes = [(224, 224), (300, 200), (97, 311), (64, 64), (1000, 751)]
    images = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]
    return [*images, images[1].convert("L"), images[2].convert("RGBA")]


@pytest.mark.parametrize("size", [96, 224])
def test_uint8_pixels_finished_per_batch_equal_the_whole_transform(size: int) -> None:
    preprocess = open_clip.image_transform(size, is_train=False)
    compact = split_transform(preprocess)
    assert compact is not None
    images = _images()
    whole = torch.stack([preprocess(image) for image in images])
    pixels = [compact.pixels(image) for image in images]
    assert all(p is not None and p.dtype == np.uint8 for p in pixels)
    finished = compact.finish(pixels, "cpu", torch.float32)  # type: ignore[arg-type]
    assert finished.dtype == torch.float32
    assert torch.equal(finished, whole)  # bit for bit, not close
    assert finished.is_contiguous()  # a channels-last input would take other conv kernels
    assert torch.equal(compact.finish(pixels[:1], "cpu", torch.float32)[0], whole[0])


def test_other_callables_keep_the_whole_transform() -> None:
    from torchvision import transforms

    assert split_transform(lambda image: image) is None
    no_normalize = transforms.Compose([transforms.Resize(8), transforms.ToTensor()])
    assert split_transform(no_normalize) is None
    grey = transforms.Compose(
        [transforms.Grayscale(), transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))]
    )
    assert split_transform(grey) is None  # one channel: not the RGB form


def _viewing_scorer(batch_size: int) -> tuple[Any, Any]:
    """open_clip's 96-px eval transform and a scorer whose model's output is a view of the
    first six numbers of its input."""
    from pytest_vlcheck.models.backends.open_clip import OpenClipScorer

    preprocess = open_clip.image_transform(96, is_train=False)
    model = torch.nn.Identity()
    model.encode_image = lambda x: x.flatten(1)[:, :6]  # type: ignore[attr-defined]
    scorer = OpenClipScorer(
        name="t", fingerprint="f", model=model, preprocess=preprocess, tokenizer=None,
        device="cpu", input_dtype=torch.float32, batch_size=batch_size,
    )  # fmt: skip
    return preprocess, scorer


def test_the_scorer_mixes_pixels_and_tensors_with_the_same_numbers() -> None:
    """A head giving no RGB image for one input (a user's transform) falls back to the whole
    transform for that image only; the batch still equals the image-by-image stack."""
    preprocess, scorer = _viewing_scorer(batch_size=8)
    images = _images()[:3]
    items = [
        scorer.preprocess_image(images[0]),
        preprocess(images[1]),
        scorer.preprocess_image(images[2]),
    ]
    assert isinstance(items[0], np.ndarray) and isinstance(items[1], torch.Tensor)
    expected = torch.stack([preprocess(image) for image in images])
    assert torch.equal(scorer._pixel_batch(items), expected)


def test_batches_finished_into_one_reused_tensor_keep_their_own_numbers() -> None:
    """The CPU batch tensor is reused from batch to batch; a model whose output is a view of
    its input (this one's) still gets each batch's embeddings copied out before the next."""
    preprocess, scorer = _viewing_scorer(batch_size=2)
    images = _images()
    encoded = scorer.encode_preprocessed([scorer.preprocess_image(image) for image in images])
    whole = torch.stack([preprocess(image) for image in images]).flatten(1)[:, :6].numpy()
    assert np.array_equal(encoded, whole)
    assert scorer.host_batch.tensor is not None and len(scorer.host_batch.tensor) == 2
