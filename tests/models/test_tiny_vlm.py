"""``tiny-vlm``'s training (``tiny_training.vlm``): its questions are true of their scenes, its
tokenizer keeps every answer one token after the prompt's, and the command writes a folder
the ``vqa:`` backend loads."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_vlcheck.images.scenes import SHAPE_PLURALS, render_scene
from pytest_vlcheck.metrics.answers import LETTERS
from tiny_training.vlm.pool import ScenePool
from tiny_training.vlm.questions import KINDS, NO, YES, ask, falsified, pair_relations


def _one(shape: str, color: str) -> dict:
    return {"objects": [{"shape": shape, "color": color, "size": 0.4, "position": [0.5, 0.5]}]}


def test_training_smoke_run(tmp_path: Path) -> None:
    from pytest_vlcheck.models.backends.vqa import load
    from pytest_vlcheck.models.protocol import ModelOptions
    from tiny_training.vlm.train import parse_args, train

    argv = ["--steps", "2", "--batch-size", "4", "--pool-size", "40", "--probe-size", "1"]
    argv += ["--tower-steps", "2", "--tower-batch-size", "4"]
    settings = parse_args([*argv, "--out", str(tmp_path)])
    log = train(settings, echo=lambda _: None, exclude=frozenset())
    assert len(log.losses) == 2 and all(math.isfinite(x) for x in log.losses)
    assert len(log.tower_losses) == 2 and all(math.isfinite(x) for x in log.tower_losses)
    written = (tmp_path / "TRAINING.md").read_text(encoding="utf-8")
    assert "| `steps` | 2 |" in written and "| `tower-steps` | 2 |" in written
    assert "## Stage 1: the vision tower alone" in written
    assert [r.n for r in log.results] == [1] * len(KINDS)
    scorer = load(str(tmp_path), ModelOptions(device="cpu"))
    image = render_scene(_one("circle", "red"))
    scores = scorer.score_pairs([image], ["a red circle"])
    assert scores.shape == (1,) and scores[0] < 0
    (said,) = scorer.generate([image], ["What color is the circle?"], 2)
    assert isinstance(said, str)


def test_stage_one_targets_are_the_scene_truth() -> None:
    """A red circle centred in the top-left patch and two blue stars in the bottom-right one
    (a 2 x 2 grid): the global and per-patch 0/1 targets, index by index, and the per-patch
    shape choice."""
    from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPES
    from tiny_training.vlm.pretrain import MAX_COUNT, scene_targets

    colors, shapes = list(OBJECT_COLORS), list(SHAPES)
    objects = [
        ("circle", "red", [0.2, 0.3]),
        ("star", "blue", [0.7, 0.9]),
        ("star", "blue", [0.9, 0.6]),
    ]
    scene = {"objects": [{"shape": s, "color": c, "size": 0.1, "position": p} for s, c, p in objects]}  # fmt: skip
    whole, patches, choice = scene_targets(scene, 2)
    red, blue = colors.index("red"), colors.index("blue")
    circle, star = shapes.index("circle"), shapes.index("star")
    pairs, counts = len(colors), len(colors) + len(colors) * len(shapes)
    expected = {red, blue, pairs + red * len(shapes) + circle, pairs + blue * len(shapes) + star}
    expected |= {
        counts + circle * MAX_COUNT,
        counts + star * MAX_COUNT,
        counts + star * MAX_COUNT + 1,
    }
    assert set(whole.nonzero()[0]) == expected
    assert patches.shape == (4, len(colors) + len(shapes))
    assert set(patches[0].nonzero()[0]) == {red, len(colors) + circle}
    assert set(patches[3].nonzero()[0]) == {blue, len(colors) + star}
    assert not patches[1].any() and not patches[2].any()
    assert choice.tolist() == [1 + circle, 0, 0, 1 + star]  # 0: nothing centred there


def test_stage_one_accuracy_reads_shapes_apart() -> None:
    """Three occupied patches of a 2 x 2 grid, colours all right: the first wholly right; the
    second holds a star and a square, and its 0/1 head misses the star (not all right) while
    its shape choice is the square (right); the third's 0/1 labels are all right but its shape
    choice is a circle, not its heart (wrong: the choice is read, not the 0/1 head). Empty patches and scene-level targets do not count towards the patch
    rates."""
    import torch

    from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPES
    from tiny_training.vlm.pretrain import GLOBAL_TARGETS, PATCH_TARGETS, SHAPE_CLASSES, accuracy

    c = len(OBJECT_COLORS)
    red, blue, green = (list(OBJECT_COLORS).index(n) for n in ("red", "blue", "green"))
    circle, star, square, heart = (c + list(SHAPES).index(n) for n in ("circle", "star", "square", "heart"))  # fmt: skip
    t_patch = torch.zeros(1, 4, PATCH_TARGETS)
    for patch, labels in enumerate([(red, circle), (blue, red, star, square), (green, heart)]):
        t_patch[0, patch, list(labels)] = 1
    logits = 2 * t_patch - 1
    logits[0, 1, star] = -1.0
    choice = torch.zeros(1, 4, SHAPE_CLASSES)
    for patch, shape in enumerate([circle, square, circle, heart]):  # the empty one not scored
        choice[0, patch, 1 + shape - c] = 1.0
    t_whole = torch.zeros(1, GLOBAL_TARGETS)
    got = accuracy(-torch.ones(1, GLOBAL_TARGETS), logits, choice, t_whole, t_patch)
    assert (got.colors, got.pairs, got.counts) == (1.0, 1.0, 1.0)
    assert got.patch_colors == 1.0
    assert got.patches == pytest.approx(2 / 3)
    assert got.patch_shapes == pytest.approx(2 / 3)


def test_stage_one_mirrors_the_patch_targets_with_the_pixels() -> None:
    """A 2 x 3 grid's rows are reversed left to right, for 0/1 targets and choices alike."""
    import torch

    from tiny_training.vlm.pretrain import mirrored

    ids = torch.arange(9).view(1, 9)
    (flipped,) = mirrored(3, ids)
    assert flipped.tolist() == [[2, 1, 0, 5, 4, 3, 8, 7, 6]]
    labels = torch.arange(18.0).view(1, 9, 2)
    (flipped,) = mirrored(3, labels)
    assert flipped[0, 0].tolist() == [4.0, 5.0] and flipped[0, 4].tolist() == [8.0, 9.0]


def test_stage_one_lr_warms_up_then_decays_to_a_tenth() -> None:
    from tiny_training.vlm.pretrain import warmup_cosine

    got = [warmup_cosine(step, 6, 2, 1.0) for step in range(7)]
    assert got[:3] == pytest.approx([0.5, 1.0, 1.0])
    assert got[4] == pytest.approx(0.55)  # half way: the mean of the peak and a tenth
    assert got[6] == pytest.approx(0.1)


def small_tower() -> Any:
    """A one-layer 16-wide CLIP ViT at 96 px, 16-px patches (seeded by the caller)."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    config = CLIPVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        image_size=96, patch_size=16,
    )  # fmt: skip
    return CLIPVisionModel(config)


def first_loss(pool: ScenePool, **options: Any) -> float:
    """The loss of one stage-1 step (batch 8) of a seed-0 ``small_tower`` on ``pool``."""
    import numpy as np
    import torch

    from tiny_training.vlm.pretrain import pretrain_tower

    pixels = torch.from_numpy(pool.pixels).permute(0, 3, 1, 2).float() / 255.0
    torch.manual_seed(0)
    losses, _ = pretrain_tower(
        small_tower(),
        lambda idx: pixels[np.asarray(idx)],
        pool.scenes,
        1,
        grid=6,
        batch_size=8,
        echo=lambda _: None,
        **options,
    )
    return losses[0]


@pytest.fixture(scope="module")
def pool() -> ScenePool:
    return ScenePool(7, 80, 96)


def test_stage_one_weights_the_positive_targets(pool: ScenePool) -> None:
    """The first step's loss from the same init: positives weighted 8 times weigh more, and
    the unweighted loss is the plain binary cross-entropy (about log 2 per head at init) plus
    the shape choice's cross-entropy (about log 9 at init)."""
    first = {weight: first_loss(pool, pos_weight=weight) for weight in (1.0, 8.0)}
    assert 2 * 0.5 + 0.8 * math.log(9) < first[1.0] < 2 * 0.9 + 1.2 * math.log(9)
    assert first[8.0] > first[1.0] + 0.05


def test_stage_one_teacher_maps_are_tiny_resnet_patches(pool: ScenePool) -> None:
    """tiny's third- and fourth-stage maps per 16-px patch (the fourth's 3 x 3 cells each
    cover 2 x 2 patches), of the image and of its mirror, standardised by the trained scenes
    only."""
    import numpy as np
    import torch

    from pytest_vlcheck.tiny import live_model
    from tiny_training.vlm.teacher import TEACHER_WIDTH, feature_maps, teacher_targets

    pixels = torch.from_numpy(pool.pixels[:6]).permute(0, 3, 1, 2).float() / 255.0
    got = teacher_targets(lambda idx: pixels[np.asarray(idx)], 6, 6, 4, batch=4)
    assert got.shape == (6, 2, 36, TEACHER_WIDTH) and got.dtype == torch.float16
    seen = got[:4].float().flatten(0, 2)
    assert seen.mean(dim=0).abs().max() < 1e-2
    spread = seen.std(dim=0)
    assert abs(float(spread.median()) - 1) < 1e-2 and float(spread.max()) < 1.01  # some never fire
    visual = live_model()[0].visual.eval()
    with torch.no_grad():
        raw = torch.stack([feature_maps(visual, p, 6) for p in (pixels, pixels.flip(-1))], dim=1)
    assert raw.shape == (6, 2, 36, TEACHER_WIDTH)
    fourth = raw[0, 0, :, 256:].view(6, 6, 512)
    assert torch.equal(fourth[0, 0], fourth[1, 1]) and not torch.equal(fourth[0, 0], fourth[2, 2])
    trained = raw[:4].flatten(0, 2)
    expected = (raw - trained.mean(dim=0)) / (trained.std(dim=0) + 1e-5)
    assert torch.allclose(got.float(), expected, rtol=1e-2, atol=2e-2)  # fp16 storage


def test_stage_one_regresses_the_teacher(pool: ScenePool) -> None:
    """The first step's loss from the same init grows by about 3 squared when every teacher
    target is 3 rather than 0 (the linear map starts near 0)."""
    import torch

    shape = (len(pool.scenes), 2, 36, 4)
    first = {v: first_loss(pool, teacher=torch.full(shape, v, dtype=torch.float16)) for v in (0.0, 3.0)}  # fmt: skip
    assert 8 < first[3.0] - first[0.0] < 10


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


def test_colour_is_asked_of_scenes_of_two_colours_and_first_alone(pool: ScenePool) -> None:
    """The curriculum: the stream's first questions are colour questions, each about a scene
    whose colours differ (so the named shape decides the answer); then colour and existence;
    then every kind."""
    from tiny_training.vlm.pool import training_stream

    stream = training_stream(pool, 3, (50, 200))
    first = [next(stream) for _ in range(50)]
    assert {q.kind for _, q in first} == {"color"}
    for i, q in first:
        objects = pool.scenes[i]["objects"]
        assert len({o["color"] for o in objects}) > 1
        shape = q.prompt.removeprefix("What color is the ").removesuffix("?")
        (named,) = [o for o in objects if o["shape"] == shape]
        assert q.answer == named["color"]
    assert {q.kind for _, q in (next(stream) for _ in range(200))} == {"color", "existence"}
    assert {q.kind for _, q in (next(stream) for _ in range(400))} == set(KINDS)
    rng = random.Random(4)
    for _ in range(40):
        i, _q = pool.question("color_choice", rng)
        assert len({o["color"] for o in pool.scenes[i]["objects"]}) > 1


def test_the_lookup_phase_asks_only_about_the_first_scenes(pool: ScenePool) -> None:
    """``lookup_scenes``: the first phase's questions are about the pool's first scenes; the
    later phases' about any; and the stream is otherwise the unrestricted one's, minus the
    draws it skipped."""
    from tiny_training.vlm.pool import training_stream

    first = pool.size // 4
    stream = training_stream(pool, 3, (60, 100), lookup_scenes=first)
    lookup = [next(stream) for _ in range(60)]
    assert {q.kind for _, q in lookup} == {"color"}
    assert max(i for i, _ in lookup) < first
    later = [i for i, _ in (next(stream) for _ in range(400))]
    assert max(later) >= first
    free = training_stream(pool, 3, (10**6,))
    drawn = [next(free) for _ in range(400)]
    assert lookup == [d for d in drawn if d[0] < first][:60]


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
    from tiny_training.vlm.batches import chat_prompt
    from tiny_training.vlm.model import Sizes, build, word_split

    words = word_split("What color is the circle ? Yes No red 3 A")
    _, processor = build(words, Sizes(vision_width=8, vision_layers=1, text_width=8, heads=1))
    tokenizer = processor.tokenizer
    prompt = chat_prompt(processor, "What color is the circle?")
    assert prompt == "USER: <image>\nWhat color is the circle? ASSISTANT:"
    for answer in (YES, NO, "red", "3", "A"):
        ids = tokenizer(prompt + " " + answer)["input_ids"]
        assert ids[:-1] == tokenizer(prompt)["input_ids"]
        assert ids[-1] != tokenizer.unk_token_id


def test_cached_features_reach_each_rows_image_tokens(pool: ScenePool) -> None:
    """Stage 2 feeds cached tower features: row i's image tokens must hold the projection of
    row i's own patches, in order, and the loss must be LLaVA's own forward's."""
    import torch

    from tiny_training.vlm.batches import Collator
    from tiny_training.vlm.model import Sizes, build, word_split
    from tiny_training.vlm.pretrain import features
    from tiny_training.vlm.train import answer_loss

    rng = random.Random(3)
    asked = [pool.question(kind, rng) for kind in ("color", "count", "relation")]
    words = [w for _, q in asked for w in word_split(q.prompt + " " + q.answer)]
    torch.manual_seed(0)
    sizes = Sizes(vision_width=16, vision_layers=1, text_width=16, text_layers=1, heads=2)
    model, processor = build(words, sizes)
    collate = Collator(processor)
    batch = collate(pool.pixels[[i for i, _ in asked]], [q for _, q in asked])
    with torch.no_grad():
        patches = features(model.model.vision_tower, batch["pixel_values"], -1)
        projected = model.model.multi_modal_projector(patches)
        stock = model(**batch).loss
        ours = answer_loss(model, batch, patches)
        hooked: list[torch.Tensor] = []
        handle = model.model.language_model.register_forward_pre_hook(
            lambda _, args, kwargs: hooked.append(kwargs["inputs_embeds"]), with_kwargs=True
        )
        model(**batch)
        handle.remove()
    assert patches.shape[1] == sizes.grid**2
    image = batch["input_ids"] == model.config.image_token_id
    for row in range(len(asked)):
        assert torch.equal(hooked[0][row][image[row]], projected[row])
    assert torch.allclose(ours, stock, atol=1e-6)
