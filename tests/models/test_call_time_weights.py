"""Numbers belong to the weights at call time: a scorer whose weights change between two calls
is measured anew (through its changed fingerprint, or always when it has none), while an
unchanged live model's next ``evaluate`` call re-encodes nothing; and a live model measured
after an in-place update equals pytest on the same weights saved to a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.forked_scripts import run_forked
from helpers.model_builders import write_colour_squares

from pytest_vlcheck.tiny import live_model

MUTABLE_MODEL = """
import numpy as np

WEIGHT = [1.0]


class Scorer:
    def encode_images(self, images):
        return np.array([[1.0, 0.0] for _ in images])

    def encode_texts(self, texts):
        return np.array([[1.0, WEIGHT[0] * (len(t) % 3 + 1)] for t in texts])


class Fingerprinted(Scorer):
    @property
    def fingerprint(self):
        return f"weight-{WEIGHT[0]}"


def plain():
    return Scorer()


def fingerprinted():
    return Fingerprinted()
"""

TEST_FILE = """
import mutable_model
from PIL import Image


def test_scores_follow_the_weights(vl_model, tmp_path):
    image = Image.new("RGB", (8, 8), (200, 10, 10))
    before = vl_model.score([image], ["a red square"])
    again = vl_model.score([image], ["a red square"])
    mutable_model.WEIGHT[0] = 5.0
    after = vl_model.score([image], ["a red square"])
    texts_after = vl_model.encode_texts(["a red square"])
    mutable_model.WEIGHT[0] = 1.0
    assert (before == again).all()
    assert (before != after).all()
    assert abs(texts_after[0, 1] / texts_after[0, 0] - 5.0) < 1e-9  # len 12: [1, 1 * WEIGHT]
"""


@pytest.mark.parametrize("factory", ["plain", "fingerprinted"])
def test_vl_model_scores_follow_changed_weights(pytester: pytest.Pytester, factory: str) -> None:
    pytester.makepyfile(mutable_model=MUTABLE_MODEL, test_weights=TEST_FILE)
    pytester.syspathinsert()
    result = pytester.runpytest(
        f"--vl-model=py:mutable_model:{factory}", "--vl-no-cache", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def _snapshot(model) -> dict:
    return {key: value.detach().clone() for key, value in model.state_dict().items()}


def _pytest_matrix(project: Path, weights: Path | str) -> dict:
    """``matrix.json`` of pytest on ``checks.yaml``, run in a process of its own (forked from
    the preloaded server: helpers/forked_scripts.py): the tiny architecture with ``weights``
    (a file), or a whole ``--vl-model`` spec (a string)."""
    from pytest_vlcheck.tiny import TINY_CONFIG

    spec = weights if isinstance(weights, str) else f"open_clip:{TINY_CONFIG}@{weights}"
    args = [
        *("checks.yaml", "-q", "-p", "no:cacheprovider", "--vl-no-cache"),
        *(f"--vl-model=m={spec}", "--vl-report=rep"),
    ]
    run_forked("-m pytest", args, project, project / "logs", 300)
    return json.loads((project / "rep" / "matrix.json").read_text())


def test_a_live_model_is_measured_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from safetensors.torch import save_file

    from pytest_vlcheck import evaluate

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    model, preprocess, tokenizer = live_model()
    flags = [m.training for m in model.modules()]

    def measure(**options):
        return evaluate(
            model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer, name="m", **options
        )

    first = measure()
    weights = _snapshot(model)
    second = measure()
    assert first.stats["m"].model_calls > 0
    assert second.stats["m"].model_calls == 0  # unchanged: nothing encoded again
    assert second.to_json() == first.to_json()

    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    updated = _snapshot(model)
    third = measure(report_dir="api")  # thumbnails, as pytest's --vl-report writes
    assert third.stats["m"].model_calls > 0
    assert [m.training for m in model.modules()] == flags
    assert all(torch.equal(updated[k], v) for k, v in _snapshot(model).items())
    assert any(not torch.equal(weights[k], updated[k]) for k in weights)

    save_file({k: v.contiguous() for k, v in updated.items()}, str(tmp_path / "upd.safetensors"))
    expected = _pytest_matrix(tmp_path, tmp_path / "upd.safetensors")
    assert third.to_json()["results"] == expected["results"]
    assert third.to_json()["results"] != first.to_json()["results"]


def test_a_live_transformers_model_evaluates_as_pytest_scores_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    from helpers.model_builders import build_hf_clip
    from transformers import AutoProcessor, CLIPModel

    from pytest_vlcheck import evaluate

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    folder = build_hf_clip(tmp_path / "clip")
    model = CLIPModel.from_pretrained(folder).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        processor = AutoProcessor.from_pretrained(folder, backend="pil")
    run = evaluate(
        model, "checks.yaml", preprocess=processor, name="m", device="cpu", report_dir="api"
    )
    expected = _pytest_matrix(tmp_path, f"hf:{folder}")
    assert run.to_json()["results"] == expected["results"]
    assert model.training


class _MeanColour:
    """A protocol object: an image is its mean RGB, a text the colour words it names."""

    fingerprint = "mean-colour-v1"

    def encode_images(self, images):
        import numpy as np

        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(0) for im in images])

    def encode_texts(self, texts):
        import numpy as np

        words = {"red": (1, 0, 0), "green": (0, 1, 0), "blue": (0, 0, 1)}
        return np.asarray(
            [[sum(words.get(w, (0, 0, 0))[i] for w in t.split()) for i in range(3)] for t in texts],
            dtype=np.float32,
        )


def test_an_image_file_changed_between_calls_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Image

    from pytest_vlcheck import evaluate

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    scorer = _MeanColour()
    first = evaluate(scorer, "checks.yaml", name="m", no_cache=True)
    assert (first.results[0].n, first.results[0].passed) == (3, 3)
    unchanged = evaluate(scorer, "checks.yaml", name="m", no_cache=True)
    assert unchanged.stats["m"].model_calls == 0
    Image.new("RGB", (64, 64), (20, 20, 220)).save(tmp_path / "red.png")  # now blue
    second = evaluate(scorer, "checks.yaml", name="m", no_cache=True)
    assert second.stats["m"].images_encoded == 1  # the edited file only
    assert (second.results[0].n, second.results[0].passed) == (3, 2)
