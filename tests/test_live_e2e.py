"""pytest end to end with a live model: a ``py:`` factory hands the runner the scorer that
``live_scorer`` makes of a model object in train mode; it must score as the same weights
loaded from their spec do."""

from __future__ import annotations

import json

import pytest
from PIL import Image

FACTORY = """\
import json

import open_clip
from safetensors.torch import load_file

from pytest_vlcheck.models.live import live_scorer
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_WEIGHTS


def make(options):
    config = json.loads(TINY_CONFIG.read_text(encoding="utf-8"))
    model = open_clip.CLIP(**config)
    model.load_state_dict(load_file(str(TINY_WEIGHTS)))
    model.train()  # as a training loop holds it
    preprocess = open_clip.image_transform(config["vision_cfg"]["image_size"], is_train=False)
    tokenizer = open_clip.tokenizer.SimpleTokenizer(context_length=32)
    return live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=options)
"""

CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.0
    examples:
      - {image: red.png, caption: a red square, negatives: [a green square, a blue square]}
      - {image: green.png, caption: a green square, negatives: [a red square, a blue square]}
      - {image: blue.png, caption: a blue circle, negatives: [a red circle, a green circle]}
"""


def test_a_live_model_scores_like_its_weights_loaded_from_the_spec(
    pytester: pytest.Pytester,
) -> None:
    for name, colour in (("red", (220, 20, 20)), ("green", (20, 200, 20)), ("blue", (20, 20, 220))):
        Image.new("RGB", (96, 96), colour).save(pytester.path / f"{name}.png")
    pytester.makepyfile(live_models=FACTORY)
    pytester.makefile(".yaml", checks=CHECKLIST)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--vl-model=spec=tiny",
        "--vl-model=live=py:live_models:make",
        "--vl-report=rep",
        "--vl-device=cpu",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    doc = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    fingerprints = {m["name"]: m["fingerprint"] for m in doc["models"]}
    assert fingerprints["live"].startswith("live:") and fingerprints["spec"] != fingerprints["live"]
    samples = [
        json.loads(line)
        for line in (pytester.path / "rep" / "samples.jsonl").read_text().splitlines()
    ]
    scores = {model: {} for model in fingerprints}
    for sample in samples:
        scores[sample["model"]][sample["example"]] = sample["scores"]
    assert len(scores["live"]) == 3 and scores["live"].keys() == scores["spec"].keys()
    for example, live in scores["live"].items():
        for row, spec_row in zip(live, scores["spec"][example], strict=True):
            assert row == pytest.approx(spec_row, abs=1e-5)
