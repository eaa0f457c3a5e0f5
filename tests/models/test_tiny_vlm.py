"""The shipped ``tiny-vlm``: it loads through its alias offline as any ``vqa:`` folder would,
answers what its training says it learned, and its training data are true of their scenes."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from pytest_vlcheck.images.scenes import SHAPE_PLURALS, render_scene
from pytest_vlcheck.metrics.answers import LETTERS
from pytest_vlcheck.tiny import TINY_VLM_DIR, TINY_VLM_SPEC
from tiny_training.vlm.pool import ScenePool
from tiny_training.vlm.questions import KINDS, NO, YES, ask, falsified, pair_relations

MAX_WEIGHTS_BYTES = 5 * 1024 * 1024
LOG = TINY_VLM_DIR / "TRAINING.md"


def test_alias_is_vqa_on_the_shipped_folder() -> None:
    from pytest_vlcheck.models.registry import parse_spec

    spec = parse_spec("tiny-vlm")
    assert (spec.name, f"{spec.scheme}:{spec.body}") == ("tiny-vlm", TINY_VLM_SPEC)
    assert (TINY_VLM_DIR / "model.safetensors").stat().st_size <= MAX_WEIGHTS_BYTES


@pytest.fixture(scope="module")
def scorer():
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.models.registry import load_scorer, parse_spec

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return load_scorer(parse_spec("tiny-vlm"), ModelOptions(device="cpu"))


def _one(shape: str, color: str) -> dict:
    return {"objects": [{"shape": shape, "color": color, "size": 0.4, "position": [0.5, 0.5]}]}


def test_loads_offline_as_stock_llava_in_fp32_eval_mode(scorer) -> None:
    import torch

    assert type(scorer.model).__name__ == "LlavaForConditionalGeneration"
    assert not scorer.model.training
    assert all(p.dtype == torch.float32 for p in scorer.model.parameters())


def test_answers_a_colour_and_a_count_as_trained(scorer) -> None:
    """Greedy answers on checklist-sized (224 px) scenes, through the generative methods."""
    two = {"objects": [{**_one("star", "blue")["objects"][0], "size": 0.2, "position": p}
                       for p in ([0.25, 0.5], [0.75, 0.5])]}  # fmt: skip
    images = [render_scene(_one("circle", "red")), render_scene(two)]
    asked = ["What color is the circle?", "How many stars are there?"]
    assert scorer.generate(images, asked, 4) == ["red", "2"]
    yes_no = scorer.next_token_logprobs(images[:1], ["Is there a circle in the image?"], [YES, NO])
    assert yes_no[0, 0] > yes_no[0, 1]


def test_the_probe_accuracies_in_training_md_are_reproduced() -> None:
    """The training command's probe stage, rerun on the shipped weights, gives TRAINING.md's
    table (within 2 points: BLAS differences may flip a near tie)."""
    import torch
    import transformers

    from tiny_training.data import scene_keys
    from tiny_training.train import bundled_scenes
    from tiny_training.vlm.probes import probe_questions, run_probes
    from tiny_training.vlm.report import probe_table
    from tiny_training.vlm.train import Settings

    s = Settings()
    model = transformers.AutoModelForImageTextToText.from_pretrained(
        str(TINY_VLM_DIR), dtype=torch.float32
    )
    processor = transformers.AutoProcessor.from_pretrained(str(TINY_VLM_DIR))
    pool, asked = probe_questions(s.seed + 1, s.probe_size, scene_keys(bundled_scenes()))
    measured = {r.kind: r.accuracy for r in run_probes(model, processor, pool, asked)}
    stated = probe_table(LOG)
    assert set(stated) == set(measured) == set(KINDS)
    assert all(abs(measured[k] - stated[k]) <= 0.02 for k in KINDS), (measured, stated)


def test_training_md_states_the_default_settings() -> None:
    from dataclasses import asdict

    from tiny_training.vlm.train import Settings

    text = LOG.read_text(encoding="utf-8")
    for key, value in asdict(Settings()).items():
        if key != "out":
            assert f"| `{key.replace('_', '-')}` | {value} |" in text


def test_training_smoke_run(tmp_path: Path) -> None:
    from pytest_vlcheck.models.backends.vqa import load
    from pytest_vlcheck.models.protocol import ModelOptions
    from tiny_training.vlm.train import parse_args, train

    argv = ["--steps", "2", "--batch-size", "4", "--pool-size", "40", "--probe-size", "1"]
    log = train(parse_args([*argv, "--out", str(tmp_path)]), echo=lambda _: None)
    assert len(log.losses) == 2 and all(math.isfinite(x) for x in log.losses)
    assert "| `steps` | 2 |" in (tmp_path / "TRAINING.md").read_text(encoding="utf-8")
    assert [r.n for r in log.results] == [1] * len(KINDS)
    scores = load(str(tmp_path), ModelOptions(device="cpu")).score_pairs(
        [render_scene(_one("circle", "red"))], ["a red circle"]
    )
    assert scores.shape == (1,) and scores[0] < 0


def test_vqascore_is_above_chance_on_clip_caption_tests(tmp_path: Path) -> None:
    """The CLIP suite's colour and counting caption tests (60 examples each, chance 50%),
    scored by VQAScore through the alias."""
    import yaml

    from pytest_vlcheck import evaluate

    tests = []
    for name, test_id in (("attribute", "color"), ("counting", "number")):
        suite = yaml.safe_load((Path("checklists") / f"{name}.yaml").read_text(encoding="utf-8"))
        (test,) = [t for t in suite["tests"] if t["id"] == test_id]
        test["generate"]["n"] = 60
        tests.append(test)
    path = tmp_path / "subset.yaml"
    path.write_text(yaml.safe_dump({"vlcheck": 1, "tests": tests}), encoding="utf-8")
    run = evaluate("tiny-vlm", path, device="cpu")
    rates = {r.test: r.pass_rate for r in run.results}
    assert rates["color"] >= 0.75 and rates["number"] >= 0.6, rates


@pytest.fixture(scope="module")
def pool() -> ScenePool:
    return ScenePool(7, 80, 96)


def test_every_question_is_answered_from_the_scene_truth(pool: ScenePool) -> None:
    rng = random.Random(0)
    for kind in KINDS:
        for _ in range(30):
            index, q = pool.question(kind, rng)
            objects = pool.scenes[index]["objects"]
            lines = q.prompt.split("\n")
            answer = q.answer
            if q.kind.endswith("_choice"):  # the letter names the right option
                answer = lines[1:-1][LETTERS.index(q.answer)].split(". ", 1)[1]
            words = lines[0].rstrip("?").split(" ")
            if kind.startswith("count"):
                shape = {p: s for s, p in SHAPE_PLURALS.items()}[words[2]]
                assert int(answer) == sum(o["shape"] == shape for o in objects)
            elif kind.startswith("color"):
                (obj,) = [o for o in objects if o["shape"] == words[-1]]
                assert answer == obj["color"]
            elif kind == "existence":
                assert (answer == YES) == any(o["shape"] == words[3] for o in objects)
            elif kind == "negation":
                (obj,) = [o for o in objects if o["shape"] == words[2]]
                assert (answer == YES) == (obj["color"] != words[-1])
            elif kind == "relation":
                said = " ".join(words[1:])
                truths = {f"the {a['color']} {a['shape']} {r} the {b['color']} {b['shape']}"
                          for a, r, b in pair_relations(objects)}  # fmt: skip
                assert (answer == YES) == (said in truths)
            else:
                assert q.prompt.startswith('Does this figure show "') and answer in (YES, NO)


def test_answers_are_balanced(pool: ScenePool) -> None:
    rng = random.Random(1)
    for kind in ("caption", "existence", "negation", "relation", "count"):
        answers = [pool.question(kind, rng)[1].answer for _ in range(400)]
        shares = [answers.count(a) / len(answers) for a in sorted(set(answers))]
        assert max(shares) - min(shares) < 0.15, (kind, shares)


def test_a_falsified_caption_names_what_the_scene_lacks() -> None:
    scene = {"objects": [{"shape": "circle", "color": "red", "size": 0.2, "position": [0.3, 0.5]},
                         {"shape": "star", "color": "blue", "size": 0.2, "position": [0.7, 0.5]}]}  # fmt: skip
    caption = "a red circle to the left of a blue star"
    made = {falsified(caption, scene["objects"], random.Random(i)) for i in range(200)}
    assert "a red circle to the right of a blue star" in made
    assert any(m.startswith("a red circle to the left of a ") and "star" not in m for m in made)
    for m in made:  # the opposite relation, or one object renamed to one the scene lacks
        words = m.split(" ")
        named = [(words[1], words[2]), (words[8], words[9])]
        assert ("right" in m) == (named == [("red", "circle"), ("blue", "star")]), m


def test_a_question_the_scene_cannot_answer_is_none() -> None:
    two = {"objects": [{"shape": "star", "color": "red", "size": 0.2, "position": [0.2, 0.5]},
                       {"shape": "star", "color": "red", "size": 0.2, "position": [0.8, 0.5]}]}  # fmt: skip
    assert ask("color", two, random.Random(0)) is None  # "the star" is not one star
    assert ask("relation", two, random.Random(0)) is None  # two red stars: not named apart
    with pytest.raises(ValueError, match="unknown question kind"):
        ask("shape", two, random.Random(0))


def test_prompt_tokens_are_a_prefix_and_every_answer_is_one_token() -> None:
    import transformers

    from tiny_training.vlm.batches import chat_prompt

    processor = transformers.AutoProcessor.from_pretrained(str(TINY_VLM_DIR))
    tokenizer = processor.tokenizer
    prompt = chat_prompt(processor, "What color is the circle?")
    assert prompt == "USER: <image>\nWhat color is the circle? ASSISTANT:"
    for answer in (YES, NO, "red", "3", "A"):
        ids = tokenizer(prompt + " " + answer)["input_ids"]
        assert ids[:-1] == tokenizer(prompt)["input_ids"]
        assert ids[-1] != tokenizer.unk_token_id
