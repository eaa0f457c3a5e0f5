"""The batched engine: every unique input encoded once, in ceil(unique / batch) calls, and
scores equal to a direct per-example computation with the same model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import build_open_clip
from PIL import Image

from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.engine import ModelRunner, judge_test
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.tasks import get_task

CHECKLIST = """\
vlcheck: 1
tests:
  - id: one
    capability: attribute/color
    task: caption
    threshold: 0
    examples:
      - {image: i0.png, caption: a red circle, negatives: [a blue circle, a green circle]}
      - {image: i1.png, caption: a blue circle, negatives: [a red circle]}
      - {image: {path: i2.png, crop: [2, 2, 20, 20]}, caption: a big square, negatives: [a small square]}
  - id: two
    capability: relation/spatial
    task: group
    threshold: 0
    examples:
      - {images: [i0.png, i3.png], captions: [a red circle, a red square]}
      - {images: [i1.png, i2.png], captions: [a blue circle, a big square]}
  - id: three
    capability: compound/noun
    task: image
    threshold: 0
    examples:
      - {text: [a red circle, a photo of a red circle], image: i0.png, distractors: [i4.png, i3.png]}
"""
UNIQUE_IMAGES = 6  # i0..i4 plus the crop of i2
UNIQUE_TEXTS = 7


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_open_clip(tmp_path_factory.mktemp("model"), seed=3)


@pytest.fixture
def checklist(tmp_path: Path):
    rng = np.random.default_rng(0)
    for index in range(5):
        pixels = rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(tmp_path / f"i{index}.png")
    (tmp_path / "c.yaml").write_text(CHECKLIST)
    return load_checklist(tmp_path / "c.yaml")


def test_batched_scores_equal_direct_computation(tiny_model, checklist, tmp_path: Path) -> None:
    config, weights = tiny_model
    spec = parse_spec(f"open_clip:{config}@{weights}")
    runner = ModelRunner(spec, ModelOptions(device="cpu", batch_size=4), ImageLoader())
    runner.prepare(checklist.tests)
    assert runner.stats.encode_image_calls == math.ceil(UNIQUE_IMAGES / 4)
    assert runner.stats.encode_text_calls == math.ceil(UNIQUE_TEXTS / 4)
    assert runner.stats.images_encoded == UNIQUE_IMAGES
    assert runner.stats.texts_encoded == UNIQUE_TEXTS

    import open_clip
    import torch

    # registered under a name of its own: open_clip's registry is global, and test_backends
    # checks that loading a spec leaves the config's own stem out of it
    reference = tmp_path / "engine-reference.json"
    reference.write_text(config.read_text())
    open_clip.add_model_config(reference)
    model, _, preprocess = open_clip.create_model_and_transforms(
        reference.stem, pretrained=str(weights)
    )
    model.eval()
    tokenizer = open_clip.get_tokenizer(reference.stem)
    loader = ImageLoader()
    for test in checklist.tests:
        for example in test.examples:
            refs, texts = get_task(test.task).grid(example)
            with torch.no_grad():
                image_features = model.encode_image(
                    torch.stack([preprocess(loader(ref)) for ref in refs])
                )
                text_features = model.encode_text(tokenizer(list(texts)))
            image_features = image_features / image_features.norm(dim=-1, keepdim=True)
            text_features = text_features / text_features.norm(dim=-1, keepdim=True)
            direct = (image_features @ text_features.T).numpy()
            grid = runner.grid(get_task(test.task).grid(example), example.id)
            np.testing.assert_allclose(grid, direct, atol=1e-5)
    # a second prepare has nothing left to encode
    runner.prepare(checklist.tests)
    assert runner.stats.encode_image_calls == math.ceil(UNIQUE_IMAGES / 4)


def _grid(runner, test):
    """The first example's scores."""
    example = test.examples[0]
    return runner.grid(get_task(test.task).grid(example), example.id)


def test_equal_inputs_give_bit_identical_scores(tiny_model, checklist) -> None:
    config, weights = tiny_model
    runner = ModelRunner(
        parse_spec(f"open_clip:{config}@{weights}"),
        ModelOptions(device="cpu", batch_size=5),
        ImageLoader(),
    )
    one, two, three = checklist.tests
    runner.prepare([one, two, three])
    red_in_one = _grid(runner, one)[0, 0]
    red_in_two = _grid(runner, two)[0, 0]
    red_in_three = _grid(runner, three)[0, 0]
    assert red_in_one.tobytes() == red_in_two.tobytes() == red_in_three.tobytes()
    assert _grid(runner, one).dtype == np.float32


def test_results_do_not_depend_on_batch_size(tiny_model, checklist) -> None:
    config, weights = tiny_model
    spec = parse_spec(f"open_clip:{config}@{weights}")
    results = []
    for batch in (1, 7):
        runner = ModelRunner(spec, ModelOptions(device="cpu", batch_size=batch), ImageLoader())
        runner.prepare(checklist.tests)
        results.append([judge_test(t, runner).to_json() for t in checklist.tests])
    for first, second in zip(*results, strict=True):
        assert first["passed"] == second["passed"]
        for a, b in zip(first["failures"], second["failures"], strict=True):
            np.testing.assert_allclose(a["scores"], b["scores"], atol=1e-5)


PAIR_SCORER = """
import numpy as np
CALLS = []
class Pairs:
    name = "pairs"
    def score_pairs(self, images, texts):
        CALLS.append(len(texts))
        return np.array([np.asarray(im, dtype=np.float32).mean() / 255 + len(t) / 100
                         for im, t in zip(images, texts)], dtype=np.float32)
def make():
    return Pairs()
"""


def test_pair_scorer_is_called_in_batches_of_unique_pairs(checklist, tmp_path, monkeypatch):
    (tmp_path / "pair_scorer_mod.py").write_text(PAIR_SCORER)
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = ModelRunner(
        parse_spec("py:pair_scorer_mod:make"), ModelOptions(batch_size=4), ImageLoader()
    )
    runner.prepare(checklist.tests)
    import pair_scorer_mod

    unique_pairs = {
        (ref.key, text)
        for test in checklist.tests
        for example in test.examples
        for ref in get_task(test.task).grid(example)[0]
        for text in get_task(test.task).grid(example)[1]
    }
    assert sum(pair_scorer_mod.CALLS) == len(unique_pairs)
    assert len(pair_scorer_mod.CALLS) == math.ceil(len(unique_pairs) / 4)
    result = judge_test(checklist.tests[0], runner)
    assert result.n == 3 and result.score_kind == "score"  # a cross-encoder's own scale


def test_a_scorer_with_its_own_batch_size_gets_that_many_inputs(checklist, tmp_path, monkeypatch):
    """A torch backend sizes its batch to its device (``--vl-batch-size=auto``); the engine
    hands any scorer with a ``batch_size`` that many inputs per call."""
    module = PAIR_SCORER.replace("class Pairs:", "class Pairs:\n    batch_size = 3")
    (tmp_path / "sized_scorer_mod.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    options = ModelOptions(batch_size=64, auto_batch=True)
    runner = ModelRunner(parse_spec("py:sized_scorer_mod:make"), options, ImageLoader())
    runner.prepare(checklist.tests)
    import sized_scorer_mod

    assert set(sized_scorer_mod.CALLS[:-1]) == {3} and 1 <= sized_scorer_mod.CALLS[-1] <= 3
