"""The embedded tiny model: its files load as a user's checkpoint would, its data are sound."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
from pytest_vlcheck.images.scenes import SHAPE_PLURALS, SHAPES
from pytest_vlcheck.tiny import TINY_CONFIG, TINY_SPEC, TINY_WEIGHTS
from tiny_training.data import HELD_OUT_PAIRS, TRAIN_CANVAS, TrainingSampler, scene_key
from tiny_training.probes import KINDS, probe_set

MAX_WEIGHTS_BYTES = 20 * 1024 * 1024


def _pairs(scene: dict) -> set[tuple[str, str]]:
    return {(o["color"], o["shape"]) for o in scene["objects"]}


def test_spec_is_an_ordinary_open_clip_spec() -> None:
    assert f"open_clip:{TINY_CONFIG}@{TINY_WEIGHTS}" == TINY_SPEC
    assert TINY_CONFIG.is_file() and TINY_WEIGHTS.is_file()
    config = json.loads(TINY_CONFIG.read_text(encoding="utf-8"))
    assert config["vision_cfg"]["image_size"] == TRAIN_CANVAS
    assert config["text_cfg"]["vocab_size"] == 49408  # open_clip's bundled BPE


def test_weights_fit_the_size_cap() -> None:
    assert TINY_WEIGHTS.stat().st_size <= MAX_WEIGHTS_BYTES


@pytest.fixture(scope="module")
def tiny_scorer():
    from pytest_vlcheck.models.backends.open_clip import load
    from pytest_vlcheck.models.protocol import ModelOptions

    return load(f"{TINY_CONFIG}@{TINY_WEIGHTS}", ModelOptions(device="cpu"))


def test_loads_through_the_open_clip_backend_in_fp32(tiny_scorer) -> None:
    import torch

    model = tiny_scorer.model
    assert not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert tiny_scorer.context_length == 32  # the tokenizer honours the config


def test_tiny_tells_colours_apart(tiny_scorer) -> None:
    """A smoke check of the shipped weights on a scene drawn as the checklists draw them."""
    import numpy as np

    from pytest_vlcheck.images.scenes import render_scene

    scene = {"objects": [{"shape": "circle", "color": "red", "size": 0.4, "position": [0.5, 0.5]}]}
    images = tiny_scorer.encode_images([render_scene(scene)])
    texts = tiny_scorer.encode_texts(["a red circle", "a green circle", "a blue circle"])
    assert images.dtype == np.float32 and texts.dtype == np.float32
    sims = (images / np.linalg.norm(images, axis=1, keepdims=True)) @ (
        texts / np.linalg.norm(texts, axis=1, keepdims=True)
    ).T
    assert int(np.argmax(sims[0])) == 0


def test_sampler_is_deterministic() -> None:
    a, b = TrainingSampler(7).batch(40), TrainingSampler(7).batch(40)
    assert a == b
    assert TrainingSampler(8).batch(40) != a


def test_held_out_pairs_are_never_sampled() -> None:
    sampler = TrainingSampler(0)
    seen: set[tuple[str, str]] = set()
    for _ in range(25):
        for sample in sampler.batch(64):
            seen |= _pairs(sample.scene)
    assert not seen & HELD_OUT_PAIRS
    # Everything else does occur, so holding out is the only reason a pair is missing.
    assert len(seen) >= 70


def test_held_out_pairs_never_appear_in_training_texts() -> None:
    texts = set()
    for sample in TrainingSampler(1).batch(1500):
        texts |= {sample.caption, sample.negative}
    for color, shape in HELD_OUT_PAIRS:
        plural = SHAPE_PLURALS[shape]
        assert not [t for t in texts if f"{color} {shape}" in t or f"{color} {plural}" in t]


def test_hard_negatives_name_a_shape_the_scene_lacks() -> None:
    names = {**{s: s for s in SHAPES}, **{p: s for s, p in SHAPE_PLURALS.items()}}
    for sample in TrainingSampler(2).batch(300):
        old, new = sample.caption.split(" "), sample.negative.split(" ")
        assert len(old) == len(new)
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
        shape_pairs = [(a, b) for a, b in changed if a in names]
        assert len(shape_pairs) == 1, sample
        a, b = shape_pairs[0]
        assert (a in SHAPES) == (b in SHAPES)  # number kept
        assert names[b] not in {o["shape"] for o in sample.scene["objects"]}
        assert all(x in ("a", "an") for pair in changed if pair not in shape_pairs for x in pair)


def test_held_out_pairs_leave_every_colour_and_shape_trained() -> None:
    from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPES

    colours = {c for c, _ in HELD_OUT_PAIRS}
    shapes = {s for _, s in HELD_OUT_PAIRS}
    assert len(colours) == len(shapes) == len(HELD_OUT_PAIRS)  # one pair per shape, per colour
    assert shapes <= set(SHAPES) and colours <= set(OBJECT_COLORS)


def test_sampled_scenes_are_valid_and_captions_name_only_what_is_there() -> None:
    from pytest_vlcheck.images.scenes import OBJECT_COLORS, validate_scene

    plurals = {p: s for s, p in SHAPE_PLURALS.items()}
    for sample in TrainingSampler(3).batch(400):
        validate_scene(sample.scene)
        words = sample.caption.split()
        colours = {o["color"] for o in sample.scene["objects"]}
        shapes = {o["shape"] for o in sample.scene["objects"]}
        named = {plurals.get(w, w) for w in words if w in SHAPES or w in plurals}
        assert named and named <= shapes, sample
        assert {w for w in words if w in OBJECT_COLORS} <= colours, sample


def test_sampler_draws_every_scene_kind() -> None:
    captions = [s.caption for s in TrainingSampler(0).batch(600)]
    for marker in (" inside ", " above ", "to the left of", "big ", "three ", "a photo of "):
        assert any(marker in c for c in captions), marker
    assert any(c.split() in (["a", s] for s in SHAPES) for c in captions)  # "a star"


def test_excluded_scenes_are_never_drawn() -> None:
    first = TrainingSampler(5).draw()
    sampler = TrainingSampler(5, exclude={scene_key(first.scene)})
    other = sampler.draw()
    assert sampler.rejected == 1
    assert scene_key(other.scene) != scene_key(first.scene)


def test_scene_key_ignores_resolution_and_spelled_defaults() -> None:
    obj = {"shape": "star", "color": "red", "size": "large", "position": [0.25, 0.5]}
    small = {"size": 112, "objects": [obj]}
    full = {
        "size": 224,
        "background": "white",
        "objects": [{**obj, "size": 0.3, "texture": "solid", "hollow": False}],
    }
    assert scene_key(small) == scene_key(full)
    assert scene_key(small) != scene_key({"objects": [{**obj, "color": "blue"}]})


def test_training_canvas_looks_like_a_resized_checklist_scene() -> None:
    """Drawing at the model's size instead of resizing a 224-px scene changes little."""
    import torch
    from open_clip.transform import image_transform

    from pytest_vlcheck.images.scenes import render_scene

    preprocess = image_transform(TRAIN_CANVAS, is_train=False)
    for sample in TrainingSampler(11).batch(6):
        direct = preprocess(render_scene(sample.scene))
        resized = preprocess(render_scene({**sample.scene, "size": 224}))
        assert float(torch.mean(torch.abs(direct - resized))) < 0.05


def test_probes_use_only_held_out_pairs_except_the_trained_controls() -> None:
    probes = probe_set(1, 3)
    assert {p.kind for p in probes} == set(KINDS)
    for p in probes:
        held = _pairs(p.scene) & HELD_OUT_PAIRS
        assert (not held) if p.kind.endswith("/trained") else held, p
        assert p.caption not in p.negatives


def test_training_smoke_run(tmp_path: Path) -> None:
    from pytest_vlcheck.models.backends.open_clip import load
    from pytest_vlcheck.models.protocol import ModelOptions
    from tiny_training.train import parse_args, train

    settings = parse_args(
        [
            *("--steps", "2", "--batch-size", "6", "--eval-size", "1", "--bn-batches", "1"),
            *("--out", str(tmp_path)),
        ]
    )
    log = train(settings, echo=lambda _: None)
    assert len(log.losses) == 2 and all(math.isfinite(x) for x in log.losses)
    weights = tmp_path / "tiny.safetensors"
    assert weights.stat().st_size == log.weights_bytes
    assert "| `steps` | 2 |" in (tmp_path / "TRAINING.md").read_text(encoding="utf-8")
    scorer = load(f"{TINY_CONFIG}@{weights}", ModelOptions(device="cpu"))
    assert scorer.encode_texts(["a red circle"]).shape == (1, 128)


def test_in_loop_evaluation_leaves_the_weights_bit_for_bit(tmp_path: Path) -> None:
    """``--eval-every`` evaluates a recalibrated twin through ``pytest_vlcheck.evaluate`` and
    logs it; the run's random streams are untouched, so the weights file is byte-identical."""
    from tiny_training.train import parse_args, parse_eval_args, train

    base = ["--steps", "2", "--batch-size", "6", "--eval-size", "1", "--bn-batches", "1"]
    train(parse_args([*base, "--out", str(tmp_path / "plain")]), echo=lambda _: None)
    log = tmp_path / "curve.jsonl"
    argv = [*base, "--out", str(tmp_path / "probed"), "--eval-every", "1"]
    argv += ["--eval-checklists", *_small_bundled_copies(tmp_path, "attribute", "counting")]
    argv += ["--eval-select", "color", "number", "--log", f"jsonl:{log}"]
    lines: list[str] = []
    train(parse_args(argv), echo=lines.append, evaluation=parse_eval_args(argv))
    plain = (tmp_path / "plain" / "tiny.safetensors").read_bytes()
    assert (tmp_path / "probed" / "tiny.safetensors").read_bytes() == plain
    assert [line.split(":")[0] for line in lines if line.startswith("eval")] == [
        "eval step 0",
        "eval step 1",
        "eval step 2",
    ]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2]
    assert "vlcheck/attribute/color/color/pass_rate" in records[0]["scalars"]
    curves = (tmp_path / "probed" / "TRAINING.md").read_text(encoding="utf-8")
    assert "| test | 0 | 1 | 2 |" in curves and "| `counting::number` |" in curves


def _small_bundled_copies(folder: Path, *names: str) -> list[str]:
    """The bundled checklists ``names`` with 18 generated examples per test instead of 240
    (three evaluations of the full tests cost ~45 s of CPU and show nothing more)."""
    paths = []
    for name in names:
        text = (bundled_checklists_dir() / f"{name}.yaml").read_text(encoding="utf-8")
        assert "      n: 240\n" in text
        paths.append(folder / f"{name}.yaml")
        paths[-1].write_text(text.replace("      n: 240\n", "      n: 18\n"), encoding="utf-8")
    return [str(path) for path in paths]


def test_a_bad_evaluation_option_stops_before_training(tmp_path: Path, capsys) -> None:
    from tiny_training.train import main

    argv = ["--steps", "2", "--batch-size", "6", "--bn-batches", "1", "--eval-every", "1"]
    argv += ["--out", str(tmp_path)]
    assert main([*argv, "--eval-select", "object/count"]) == 2
    err = capsys.readouterr().err
    assert "select: 'object/count' is neither a test id nor a capability" in err
    assert not (tmp_path / "tiny.safetensors").exists()


def test_zero_steps_writes_the_initialised_twin(tmp_path: Path) -> None:
    from safetensors import safe_open

    from tiny_training.train import parse_args, train

    train(parse_args(["--steps", "0", "--eval-size", "0", "--out", str(tmp_path)]), echo=print)
    with safe_open(str(tmp_path / "tiny.safetensors"), "pt") as f:
        meta = json.loads(f.metadata()["vlcheck_tiny"])
    assert meta["steps"] == 0 and meta["seed"] == 0


def test_clip_loss_matches_hand_computed_values() -> None:
    import torch

    from tiny_training.train import clip_loss

    eye = torch.eye(2)
    scale = torch.tensor(2.0)
    # Distinct captions, orthonormal features: each row is -log(e^2 / (e^2 + e^0)).
    expected = math.log(1 + math.exp(-2.0))
    assert float(clip_loss(eye, eye, scale, ["a", "b"])) == pytest.approx(expected)
    # The same caption twice: the target spreads over both, and equal logits give log 2.
    same = torch.ones(2, 1)
    assert float(clip_loss(same, same, scale, ["a", "a"])) == pytest.approx(math.log(2))
    # Hard negatives join every image's candidates (image-to-text only): two zero-feature
    # negatives add e^0 twice to each row's denominator.
    neg = torch.zeros(2, 2)
    got = float(clip_loss(eye, eye, scale, ["a", "b"], neg, ["c", "d"]))
    with_neg = math.log((math.exp(2.0) + 3.0) / math.exp(2.0))
    assert got == pytest.approx((with_neg + expected) / 2)
    # A negative equal to the image's own caption is masked, not a contradiction (no nan);
    # the other one ("b" for image 0) is false of that image and stays: e^0 more per row.
    clash = float(clip_loss(eye, eye, scale, ["a", "b"], eye, ["a", "b"]))
    masked = math.log((math.exp(2.0) + 2.0) / math.exp(2.0))
    assert clash == pytest.approx((masked + expected) / 2)
    # The two-way term: softplus(scale * (s(i, negative_i) - s(i, caption_i))) per image.
    pair = float(clip_loss(eye, eye, scale, ["a", "b"], neg, ["c", "d"], hard_weight=0.5))
    assert pair == pytest.approx(got + 0.5 * math.log(1 + math.exp(-2.0)))


def test_shipped_weights_come_from_the_documented_default_command() -> None:
    from dataclasses import asdict

    from safetensors import safe_open

    from tiny_training.train import Settings

    with safe_open(str(TINY_WEIGHTS), "pt") as f:
        recorded = json.loads(f.metadata()["vlcheck_tiny"])
    defaults = asdict(Settings()) | {"config": TINY_CONFIG.name}
    defaults.pop("out")  # where the files go is not part of the recipe (nor of the bytes)
    assert recorded == defaults
    log = (TINY_CONFIG.parent / "TRAINING.md").read_text(encoding="utf-8")
    assert f"| `steps` | {defaults['steps']} |" in log


def test_bundled_checklist_scenes_are_never_training_scenes() -> None:
    from tiny_training.data import scene_keys
    from tiny_training.train import bundled_scenes

    keys = scene_keys(bundled_scenes())
    assert len(keys) > 1000  # the exclusion list is real, not empty
    sampler = TrainingSampler(0, exclude=keys)
    assert not [s for s in sampler.batch(1000) if scene_key(s.scene) in keys]
