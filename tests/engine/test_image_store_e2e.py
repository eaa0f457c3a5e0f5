"""A live model's image store end to end: every budget gives the same embeddings, bit for bit,
as the model's whole eval transform; over the budget the first images of the plan are kept
and exactly the rest is prepared again at each call (counted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import write_colour_squares

from pytest_vlcheck.tiny import live_model

PIXELS = 96 * 96 * 3  # one image of tiny's input as uint8


def _calls(budget: int | None) -> list[tuple[list, object, dict]]:
    """First, unchanged and after-update calls: results, stats, the runner's unit vectors."""
    import torch

    from pytest_vlcheck import evaluate
    from pytest_vlcheck.run.live_runners import LIVE_RUNNERS

    model, preprocess, tokenizer = live_model()
    options = {} if budget is None else {"image_memory": budget}
    calls = []
    for step in range(3):
        if step == 2:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.mul_(1.001)
        run = evaluate(
            model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer, name="m", **options
        )
        memory = LIVE_RUNNERS._held[model].scores.memory
        calls.append((run.to_json()["results"], run.stats["m"], dict(memory.images)))
    calls.append(model)  # type: ignore[arg-type]
    return calls


def test_every_budget_gives_the_same_embeddings_and_recomputes_the_part_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from pytest_vlcheck.engine.scores.cached_scorer import _normalise

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    default, two, none = (_calls(budget) for budget in (None, 2 * PIXELS, 1))
    for calls in (two, none):
        for (results, _, vectors), (want, _, want_vectors) in zip(
            calls[:3], default[:3], strict=True
        ):
            assert results == want
            assert vectors.keys() == want_vectors.keys()
            assert all(np.array_equal(vectors[k], want_vectors[k]) for k in vectors)
    counts = {
        name: [(s.images_prepared, s.images_recalled) for _, s, _ in calls[:3]]
        for name, calls in (("default", default), ("two", two), ("none", none))
    }
    assert counts == {
        "default": [(3, 0), (0, 0), (0, 3)],
        "two": [(3, 0), (0, 0), (1, 2)],  # the first two of the plan kept
        "none": [(3, 0), (0, 0), (3, 0)],
    }
    # The updated model's vectors equal its whole eval transform's, image by image stacked.
    model = default[3]
    _, preprocess, _ = live_model()
    from PIL import Image

    keys = list(default[2][2])
    pixels = torch.stack([preprocess(Image.open(key[1]).convert("RGB")) for key in keys])
    model.eval()
    with torch.no_grad():
        raw = model.encode_image(pixels).numpy()
    expected = _normalise(raw)
    assert all(np.array_equal(default[2][2][k], expected[i]) for i, k in enumerate(keys))


def test_a_live_models_runner_goes_with_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry holds runners weakly by model; between calls a runner holds no scorer,
    so a model the loop drops is freed with its runner and its image store."""
    import gc
    import weakref

    from pytest_vlcheck import evaluate
    from pytest_vlcheck.run.live_runners import LIVE_RUNNERS

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    model, preprocess, tokenizer = live_model()
    evaluate(model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer)
    runner = weakref.ref(LIVE_RUNNERS._held[model])
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None and runner() is None


def test_another_worker_count_keeps_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workers`` says how many cores prepare images, not what they are: the next call with
    another count recalls every image it kept."""
    import torch

    from pytest_vlcheck import evaluate

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    model, preprocess, tokenizer = live_model()
    calls = []
    for workers in (1, 2):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(1.001)  # everything is encoded again
        run = evaluate(
            model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer, workers=workers
        )
        calls.append(run.stats["model"])
    assert calls[0].images_prepared > 0 and calls[0].images_recalled == 0
    assert calls[1].images_prepared == 0 and calls[1].images_recalled == calls[0].images_prepared
