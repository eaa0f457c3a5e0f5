"""``precision="bf16"`` on an fp32 live model runs on one cast copy of its weights per call
that encodes something (none for an unchanged model's call), and leaves the caller's model
as it was: fp32, its train flags, its weights."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.model_builders import write_colour_squares

from pytest_vlcheck.tiny import live_model


def test_a_lower_precision_runs_on_one_cast_copy_per_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from pytest_vlcheck import evaluate

    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    model, preprocess, tokenizer = live_model()
    flags = [m.training for m in model.modules()]
    runs = []
    for step in range(3):
        if step == 2:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.mul_(1.001)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        runs.append(
            evaluate(
                model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer, precision="bf16"
            )
        )
        after = model.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before)
        assert all(p.dtype == torch.float32 for p in model.parameters())
        assert [m.training for m in model.modules()] == flags
    assert runs[0].stats["model"].model_calls > 0 and runs[1].stats["model"].model_calls == 0
    fp32 = evaluate(model, "checks.yaml", preprocess=preprocess, tokenizer=tokenizer)
    assert [r.n for r in fp32.results] == [r.n for r in runs[2].results]


def test_the_copy_is_made_once_per_scorer_on_first_use() -> None:
    import torch

    from pytest_vlcheck.models.live.scorer import live_scorer
    from pytest_vlcheck.models.protocol import ModelOptions

    model, preprocess, tokenizer = live_model()
    options = ModelOptions(device="cpu", precision="bf16")
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=options)
    stand_in = scorer.encoder.model
    assert stand_in.copies == 0  # nothing encoded: no copy
    scorer.encode_texts(["a red square"])
    scorer.encode_texts(["a blue circle"])
    assert stand_in.copies == 1
    assert stand_in.current().visual.conv1.weight.dtype == torch.bfloat16
    assert model.visual.conv1.weight.dtype == torch.float32
