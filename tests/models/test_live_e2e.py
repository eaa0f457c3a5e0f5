"""pytest end to end with a live model: a ``py:`` factory hands the runner the scorer that
``live_scorer`` makes of a model object in train mode; it must score as the same weights
loaded from their spec do."""

from __future__ import annotations

import json

import pytest
from helpers.model_builders import write_colour_squares

FACTORY = """\
from pytest_vlcheck.models.live.scorer import live_scorer
from pytest_vlcheck.tiny import live_model


def make(options):
    model, preprocess, tokenizer = live_model()  # in train mode, as a training loop holds it
    return live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=options)
"""


def test_a_live_model_scores_like_its_weights_loaded_from_the_spec(
    pytester: pytest.Pytester,
) -> None:
    write_colour_squares(pytester.path)
    pytester.makepyfile(live_models=FACTORY)
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
