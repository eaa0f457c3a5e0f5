"""Seeded image and text perturbations: what each does, their bounds, keys and determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_vlcheck.engine.scores.content_keys import image_key
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.perturb import ImagePerturbation, derive_seed, make_perturbation
from pytest_vlcheck.images.refs import ImageRef, canonical_scene
from pytest_vlcheck.images.scenes import occluded, pixel_digest, render_scene
from pytest_vlcheck.texts.perturb import add_typos

SCENE = {
    "size": [64, 48],
    "background": "white",
    "objects": [
        {"shape": "circle", "color": "red", "size": 0.3, "position": [0.3, 0.5]},
        {"shape": "square", "color": "blue", "size": 0.3, "position": [0.7, 0.5]},
    ],
}
SPECS = [
    ("jpeg", 30),
    ("resize", 0.5),
    ("crop", 0.75),
    ("rotate", 10),
    ("brightness", 0.3),
    ("noise", 0.05),
    ("hflip", None),
]
ROOT = Path(__file__).resolve().parents[2]


def _ref(perturb: ImagePerturbation | None = None) -> ImageRef:
    text = canonical_scene(SCENE)
    return ImageRef("scene", text, text, perturb=perturb)


def _digests() -> dict[str, str]:
    """Pixel digests of every perturbation of SCENE and a few typos (also run in a child)."""
    loader = ImageLoader()
    out = {}
    for kind, amount in SPECS:
        perturb = make_perturbation(kind, amount, derive_seed("ex-1", 0, 7))
        out[kind] = pixel_digest(loader(_ref(perturb)))
    out["typos"] = add_typos("a photo of a red circle", 2, derive_seed("ex-1", 1, 0))
    return out


def test_each_perturbation_changes_the_image_as_described() -> None:
    original = render_scene(SCENE)
    loader = ImageLoader()
    sizes = {}
    for kind, amount in SPECS:
        image = loader(_ref(make_perturbation(kind, amount, 5)))
        assert pixel_digest(image) != pixel_digest(original), kind
        sizes[kind] = image.size
    assert sizes == {
        "jpeg": (64, 48),
        "resize": (32, 24),
        "crop": (48, 36),
        "rotate": (64, 48),
        "brightness": (64, 48),
        "noise": (64, 48),
        "hflip": (64, 48),
    }
    flipped = make_perturbation("hflip", True, 0)
    assert pixel_digest(flipped.apply(flipped.apply(original))) == pixel_digest(original)


def test_same_seed_same_pixels_other_seed_other_pixels() -> None:
    image = render_scene(SCENE)
    for kind in ("crop", "rotate", "brightness", "noise"):
        a, b, c = (make_perturbation(kind, None, s).apply(image) for s in (1, 1, 2))
        assert pixel_digest(a) == pixel_digest(b), kind
        assert pixel_digest(a) != pixel_digest(c), kind


def test_perturbations_are_reproducible_across_processes() -> None:
    """A child process (another hash seed) draws exactly the same pixels and typos."""
    code = "import json, test_perturb; print(json.dumps(test_perturb._digests(), sort_keys=True))"
    env = dict(
        os.environ,
        PYTHONHASHSEED="12345",
        PYTHONPATH=os.pathsep.join([str(ROOT), str(Path(__file__).parent)]),
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(child.stdout) == _digests()


def test_derive_seed_is_sha256_of_the_parts() -> None:
    import hashlib

    expected = int.from_bytes(hashlib.sha256(b"ex\x1f3\x1f0").digest()[:8], "big")
    assert derive_seed("ex", 3, 0) == expected
    assert derive_seed("ex", 3, 1) != expected


def test_canonical_names_the_seed_only_for_seeded_kinds() -> None:
    assert make_perturbation("jpeg", None, 99).canonical() == "jpeg:30"
    assert make_perturbation("resize", 0.5, 99).canonical() == "resize:0.5"
    assert make_perturbation("noise", 0.05, 99).canonical() == "noise:0.05@99"
    assert make_perturbation("hflip", True, 99).canonical() == "hflip:0"


@pytest.mark.parametrize(
    ("kind", "amount", "message"),
    [
        ("jpeg", 200, "'jpeg' is 200; expected a whole number from 5 to 95 (JPEG quality)"),
        ("jpeg", 30.5, "expected a whole number from 5 to 95"),
        ("rotate", 45, "'rotate' is 45; expected a number from 0 to 20"),
        ("crop", "big", "'crop' needs a number"),
        ("hflip", 2, "'hflip' takes no amount"),
        ("blur", 1, "unknown image perturbation 'blur'"),
    ],
)
def test_bad_amounts_say_what_is_expected(kind: str, amount: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_perturbation(kind, amount, 0)


def test_typos_swap_different_neighbouring_letters() -> None:
    typed = add_typos("a red circle", 1, 3)
    assert typed != "a red circle" and sorted(typed) == sorted("a red circle")
    assert sum(x != y for x, y in zip(typed, "a red circle", strict=True)) == 2
    assert add_typos("a red circle", 1, 3) == typed
    assert add_typos("a aa", 2, 0) == "a aa"  # nothing to swap: unchanged, the caller reports
    two = add_typos("a photo of a red circle", 2, 1)
    assert sum(x != y for x, y in zip(two, "a photo of a red circle", strict=True)) == 4


def test_a_perturbation_is_part_of_the_image_identity() -> None:
    plain = _ref()
    jpeg = _ref(make_perturbation("jpeg", 30, 0))
    assert plain.key != jpeg.key
    assert jpeg.key == _ref(make_perturbation("jpeg", 30, 5)).key  # unseeded: shared
    assert image_key(plain) != image_key(jpeg)
    assert image_key(jpeg) != image_key(_ref(make_perturbation("jpeg", 40, 0)))
    assert jpeg.describe().endswith(" perturb=jpeg:30")
    assert replace(jpeg, perturb=None) == plain


def test_a_hidden_object_leaves_the_scene_as_without_it() -> None:
    without = dict(SCENE, objects=SCENE["objects"][1:])
    assert pixel_digest(render_scene(occluded(SCENE, 0))) == pixel_digest(render_scene(without))
    assert SCENE["objects"][0].get("hidden") is None  # the original spec is not changed
    with pytest.raises(ValueError, match=r"objects\[0\].hidden: expected true or false"):
        render_scene({**SCENE, "objects": [dict(SCENE["objects"][0], hidden="yes")]})
