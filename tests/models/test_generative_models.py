"""The asking kinds on tiny random LLaVA, Qwen2-VL and PaliGemma built offline: one pytest run
per model over a checklist holding every kind, its samples.jsonl reproduced by an independent
computation from the stored prompt (a forward pass for every per-option score, transformers'
``generate`` for every output), ``evaluate`` equal to pytest, and the backend's batched
generative methods equal to unbatched ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.models.backends import vqa as vqa_backend
from pytest_vlcheck.models.protocol import ModelOptions

CPU = ModelOptions(device="cpu")
COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}
CHECKLIST = """\
vlcheck: 1
tests:
  - id: likelihood
    capability: attribute/color
    task: choice
    threshold: 0
    examples:
      - {image: red.png, question: What colour is the square?, options: [green, red, blue], answer: 1}
      - {image: blue.png, question: What colour?, options: [blue, a red one], answer: 0}
  - id: letters
    capability: attribute/color
    task: choice
    scoring: letter
    rotate: true
    threshold: 0
    examples:
      - {image: green.png, question: Which colour?, options: [red, green, blue], answer: 1}
  - id: generated
    capability: attribute/color
    task: choice
    scoring: generate
    rotate: true
    max_new_tokens: 3
    threshold: 0
    examples:
      - {image: red.png, question: Which colour?, options: [red, green], answer: 0}
  - id: count
    capability: object/counting
    task: answer
    compare: number
    max_new_tokens: 5
    threshold: 0
    examples:
      - {image: red.png, question: How many squares are there?, answers: ["1", one]}
      - {image: blue.png, question: What is it?, answers: [a square]}
  - id: pope
    capability: object/existence
    task: match
    decide: yes_vs_no
    threshold: 0
    examples:
      - {image: red.png, caption: dog, question: Is there a dog in the image?, label: no_match}
      - {image: green.png, caption: a green square, label: match}
"""
IMAGES = {"red.png": "red", "green.png": "green", "blue.png": "blue"}


def _image(name: str) -> Image.Image:
    return Image.new("RGB", (40, 36), COLOURS[IMAGES[name]])


def _answer_log_prob(scorer: Any, image: Image.Image, rendered: str, answer: str) -> float:
    """The summed log-probability of ``answer``'s tokens after ``rendered``, written out: one
    unpadded forward, the answer's tokens those of prompt + answer after the prompt's."""
    import torch

    processor, model = scorer.processor, scorer.model
    if scorer.suffix_form:  # PaliGemma: the rendered prefix, the answer a suffix (+ EOS)
        inputs = processor(images=[image], text=[rendered], suffix=[answer], return_tensors="pt")
        n_answer, end = int(inputs["token_type_ids"].sum()) - 1, 1
        inputs.pop("labels")
    else:
        # the builders' templates: a space after LLaVA's "ASSISTANT:", none after "assistant\n"
        full = rendered + ("" if rendered[-1].isspace() else " ") + answer
        tokens = processor.tokenizer
        n_answer = len(tokens(full)["input_ids"]) - len(tokens(rendered)["input_ids"])
        inputs, end = processor(images=[image], text=[full], return_tensors="pt"), 0
    with torch.no_grad():
        log_probs = torch.log_softmax(model(**inputs).logits[0].double(), dim=-1)
    ids = inputs["input_ids"][0]
    last = len(ids) - end
    return sum(float(log_probs[p, ids[p + 1]]) for p in range(last - n_answer - 1, last - 1))


def _generated(scorer: Any, image: Image.Image, rendered: str, tokens: int) -> str:
    """transformers' greedy ``generate`` on one unpadded prompt."""
    import torch

    inputs = scorer.processor(images=[image], text=[rendered], return_tensors="pt")
    with torch.no_grad():
        out = scorer.model.generate(**inputs, max_new_tokens=tokens, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :]
    return scorer.tokenizer.decode(new, skip_special_tokens=True).strip()


def test_batched_generative_methods_equal_unbatched(family_dir: Path):
    scorer = vqa_backend.load(str(family_dir), CPU)
    pictures = [*map(_image, IMAGES), Image.new("RGB", (24, 30), (90, 90, 0))]
    prompts = ["What colour?", "How many squares are there in the image?", "A", "Is it?"]
    batched = scorer.generate(pictures, prompts, 6)
    assert batched == [
        scorer.generate([p], [q], 6)[0] for p, q in zip(pictures, prompts, strict=True)
    ]
    options = ["red", "two", "B", "a longer answer"]
    together = scorer.score_continuations(pictures, prompts, options)
    alone = [
        scorer.score_continuations([p], [q], [o])[0]
        for p, q, o in zip(pictures, prompts, options, strict=True)
    ]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    letters = scorer.next_token_logprobs(pictures, prompts, ["A", "B"])
    assert letters.shape == (4, 2) and letters.dtype == np.float32
    np.testing.assert_allclose(
        letters[:, 1], scorer.score_continuations(pictures, prompts, ["B"] * 4), atol=1e-6
    )


def test_the_generation_settings_name_the_request(llava_dir: Path, tmp_path: Path):
    """max_new_tokens is part of what is asked: two tests differing only there each generate,
    and equal requests across tests are asked once."""
    for name in IMAGES:
        _image(name).save(tmp_path / name)
    text = CHECKLIST.split("  - id: likelihood")[0] + (
        "  - id: short\n    capability: a/b\n    task: answer\n    max_new_tokens: 1\n"
        "    threshold: 0\n    examples: [{image: red.png, question: Say it, answers: [x]}]\n"
        "  - id: long\n    capability: a/b\n    task: answer\n    max_new_tokens: 6\n"
        "    threshold: 0\n    examples: [{image: red.png, question: Say it, answers: [x]}]\n"
        "  - id: again\n    capability: a/b\n    task: answer\n    max_new_tokens: 6\n"
        "    threshold: 0\n    examples: [{image: red.png, question: Say it, answers: [y]}]\n"
    )
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    run = evaluate(f"vqa:{llava_dir}", tmp_path / "c.yaml", device="cpu", no_cache=True)
    said = {r["test"]: r["failures"][0]["said"]["output"] for r in run.to_json()["results"]}
    assert said["long"] == said["again"] and said["long"].startswith(said["short"])
    assert len(said["short"]) <= 1 < len(said["long"])


def test_buffers_a_checkpoint_does_not_hold_are_set_after_loading(paligemma_dir: Path):
    """transformers 5.24 leaves PaliGemma's SigLIP position ids and Gemma embedding scale as
    the memory held them; loading sets them, and a model whose buffers were spoilt is set
    right again."""
    import torch

    from pytest_vlcheck.models.backends.unsaved_buffers import restore_unsaved_buffers

    model = vqa_backend.load(str(paligemma_dir), CPU).model
    buffers = dict(model.named_buffers())
    (ids,) = [b for name, b in buffers.items() if name.endswith("embeddings.position_ids")]
    (scale,) = [b for name, b in buffers.items() if name.endswith("embed_scale")]
    assert ids.tolist() == [list(range(ids.shape[1]))]
    assert float(scale) == pytest.approx(32**0.5)  # the tiny Gemma's hidden size
    with torch.no_grad():
        ids.fill_(10**9)
        scale.fill_(-1.0)
    assert restore_unsaved_buffers(model) == 2
    assert ids.tolist() == [list(range(ids.shape[1]))] and float(scale) == pytest.approx(32**0.5)
    assert restore_unsaved_buffers(model) == 0


# last: the modules an in-process pytest run imports are dropped when it ends, and a model
# loaded after that through modules imported anew loses its checkpoint key mapping
def test_every_asking_kind_through_pytest_reproduced_by_hand(
    pytester: pytest.Pytester, family_dir: Path
):
    scorer = vqa_backend.load(str(family_dir), CPU)
    (pytester.path / "asks.yaml").write_text(CHECKLIST, encoding="utf-8")
    for name in IMAGES:
        _image(name).save(pytester.path / name)
    result = pytester.runpytest(
        f"--vl-model=vqa:{family_dir}", "--vl-report=rep", "--vl-device=cpu",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=5)
    report = pytester.path / "rep"
    samples = [json.loads(line) for line in (report / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 8
    for row in samples:
        image = _image(row["images"][0])
        if row["test"] in ("likelihood", "letters", "pope"):
            prompts = row.get("prompts", [row.get("prompt")])
            for shift, (rendered, scores) in enumerate(zip(prompts, row["scores"], strict=True)):
                if row["test"] == "pope":
                    answers = ["Yes", "No"]
                elif row["test"] == "letters":  # option j was shown at letter (j - shift) % k
                    k = len(row["texts"])
                    answers = ["ABC"[(j - shift) % k] for j in range(k)]
                else:
                    answers = row["texts"]
                expected = [_answer_log_prob(scorer, image, rendered, a) for a in answers]
                np.testing.assert_allclose(scores, expected, atol=2e-4)
        else:
            outputs = row.get("outputs", [row.get("output")])
            prompts = row.get("prompts", [row.get("prompt")])
            tokens = 3 if row["test"] == "generated" else 5
            for rendered, output in zip(prompts, outputs, strict=True):
                assert output == _generated(scorer, image, rendered, tokens)
    by_pytest = json.loads((report / "matrix.json").read_text())["results"]
    by_api = evaluate(f"vqa:{family_dir}", pytester.path / "asks.yaml", device="cpu", no_cache=True)
    api = by_api.to_json()["results"]
    keys = ("test", "n", "passed", "metrics", "ties")
    assert [{k: r[k] for k in keys} for r in api] == [{k: r[k] for k in keys} for r in by_pytest]
    assert [f["said"] for r in api for f in r["failures"]] == [
        f["said"] for r in by_pytest for f in r["failures"]
    ]
