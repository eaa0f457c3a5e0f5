"""Synthetic scenes: pinned pixels, validation messages, VL-CheckList bins, `vlcheck render`."""

from __future__ import annotations

import json
import math

import pytest

from pytest_vlcheck.images import scenes
from pytest_vlcheck.images.refs import canonical_scene
from pytest_vlcheck.images.scenes import (
    location_bin,
    object_box,
    pixel_digest,
    render_canonical,
    render_scene,
    size_bin,
    validate_scene,
)

FIXED = {
    "size": 224,
    "background": "beige",
    "objects": [
        {"shape": "circle", "color": "red", "size": 0.3, "position": [0.3, 0.3]},
        {
            "shape": "star",
            "color": "blue",
            "size": 0.25,
            "position": [0.7, 0.3],
            "texture": "striped",
        },
        {
            "shape": "triangle",
            "color": [10, 200, 90],
            "size": 0.28,
            "position": [0.3, 0.72],
            "texture": "dotted",
            "hollow": True,
        },
        {
            "shape": "heart",
            "color": "purple",
            "size": "large",
            "position": [0.72, 0.72],
            "texture": "checkered",
        },
        {"shape": "cross", "color": "yellow", "size": 0.2, "position": [0.98, 0.02]},
        {
            "shape": "hexagon",
            "color": "black",
            "size": 0.12,
            "position": [0.5, 0.5],
            "hollow": True,
        },
        {"shape": "diamond", "color": "orange", "size": 0.1, "position": [0.5, 0.1]},
        {
            "shape": "square",
            "color": "pink",
            "size": 0.1,
            "position": [0.06, 0.94],
            "texture": "striped",
        },
    ],
}
# Recorded once; a change means the same spec now gives other pixels (a renderer, numpy or
# Pillow change) and every cached score or baseline built on scenes is stale.
FIXED_DIGEST = "d1cc0def99abf722107aa14b762a60defee5328524f24c3ccb4ff06b08124b32"
NON_SQUARE = {
    "size": [96, 64],
    "objects": [{"shape": "circle", "color": "green", "size": 0.5, "position": [0.25, 0.5]}],
}
NON_SQUARE_DIGEST = "a1527f37a4b96f5b5397576a07540d381073f7182548dd394a254eee2cfa212c"


def one(**obj):
    base = {"shape": "square", "color": "red", "size": 0.25, "position": [0.5, 0.5]}
    return {"size": 100, "background": "white", "objects": [dict(base, **obj)]}


# --------------------------------------------------------------------------- determinism


def test_fixed_scene_pixels_are_pinned():
    image = render_scene(FIXED)
    assert image.mode == "RGB" and image.size == (224, 224)
    assert pixel_digest(image) == FIXED_DIGEST


BUNDLED_DIGEST = "59cb0ff072c47e478e05018dd1fa851c251a864a289787341312eaf1d4b929d7"
"""The sha256 over the pixel digests of every scene of the bundled checklists (5,080), in
the order of their canonical JSON, recorded with the renderer before it painted packed
samples in clusters: a faster renderer must give the same pixels."""


def test_every_bundled_scene_keeps_its_pixels():
    import hashlib

    from pytest_vlcheck.checklist import load_checklist
    from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
    from pytest_vlcheck.tasks import get_task

    scenes = set()
    for path in sorted(bundled_checklists_dir().glob("*.yaml")):
        for test in load_checklist(path).tests:
            for example in test.examples:
                scenes.update(ref.location for ref in get_task(test.task).grid(example)[0])
    digest = hashlib.sha256()
    for location in sorted(scenes):
        digest.update(pixel_digest(render_scene(json.loads(location))).encode())
    assert len(scenes) == 5080 and digest.hexdigest() == BUNDLED_DIGEST


def test_non_square_canvas_pixels_are_pinned():
    image = render_scene(NON_SQUARE)
    assert image.size == (96, 64)
    assert pixel_digest(image) == NON_SQUARE_DIGEST


def test_render_canonical_matches_and_returns_a_copy():
    text = canonical_scene(FIXED)
    first = render_canonical(text)
    assert pixel_digest(first) == FIXED_DIGEST
    first.putpixel((0, 0), (1, 2, 3))  # a caller scribbling on its image ...
    assert pixel_digest(render_canonical(text)) == FIXED_DIGEST  # ... leaves the cache alone


def test_object_order_is_painting_order():
    red_on_top = {
        "objects": [
            {"shape": "square", "color": "blue", "size": 0.5, "position": [0.5, 0.5]},
            {"shape": "square", "color": "red", "size": 0.5, "position": [0.5, 0.5]},
        ]
    }
    assert render_scene(red_on_top).getpixel((112, 112)) == scenes.COLORS["red"]


# --------------------------------------------------------------------------- drawing


def test_solid_square_fills_its_box_exactly():
    image = render_scene(one())  # side 25 px at x0 = floor(50 - 12.5 + 0.5) = 38
    assert object_box(one()["objects"][0], (100, 100)) == (38, 38, 25, 25)
    assert image.getpixel((38, 38)) == scenes.COLORS["red"]
    assert image.getpixel((62, 62)) == scenes.COLORS["red"]
    assert image.getpixel((37, 50)) == scenes.COLORS["white"]
    assert image.getpixel((63, 50)) == scenes.COLORS["white"]


def test_hollow_shape_shows_background_inside():
    image = render_scene(one(hollow=True))
    assert image.getpixel((50, 50)) == scenes.COLORS["white"]
    assert image.getpixel((39, 50)) == scenes.COLORS["red"]


@pytest.mark.parametrize("texture", ["striped", "dotted", "checkered"])
def test_textures_use_two_colours_inside_the_object(texture):
    image = render_scene(one(texture=texture, size=0.6))
    inside = {image.getpixel((x, y)) for x in range(30, 70, 2) for y in range(30, 70, 2)}
    assert scenes.COLORS["red"] in inside
    assert len(inside) >= 2


def test_every_shape_has_a_distinct_silhouette():
    masks = set()
    for shape in scenes.SHAPES:
        image = render_scene(one(shape=shape, size=0.8, color="black"))
        masks.add(image.convert("L").point(lambda v: 255 if v < 128 else 0).tobytes())
    assert len(masks) == len(scenes.SHAPES)


def test_objects_off_the_edge_are_clipped():
    spec = one(position=[0.0, 1.0], size=0.2)
    assert object_box(spec["objects"][0], (100, 100)) == (0, 90, 10, 10)
    render_scene(spec)  # no error; the visible quarter is drawn


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"bg": "white"}, "bg: unknown key; expected one of size, background, objects"),
        ({"size": 8}, "size: expected an integer or [width, height] in pixels, 16-2048"),
        ({"background": "teal"}, "background: unknown colour 'teal'"),
        ({"objects": {"shape": "circle"}}, "objects: expected a list of objects"),
        (one(shape="blob"), "objects[0].shape: unknown shape 'blob'; expected one of circle"),
        (one(color=[1, 2]), "objects[0].color: expected a colour name or [r, g, b]"),
        (one(color=[0, 0, 300]), "objects[0].color: expected a colour name or [r, g, b]"),
        (one(size=0), "objects[0].size: expected a fraction of the canvas width in (0, 2]"),
        (one(size="huge"), "objects[0].size: unknown size word 'huge'"),
        (one(position=[0.5]), "objects[0].position: expected [x, y], fractions"),
        (one(position=[1.5, 0.5]), "objects[0].position: expected [x, y], fractions"),
        (one(texture="wavy"), "objects[0].texture: unknown texture 'wavy'"),
        (one(hollow="yes"), "objects[0].hollow: expected true or false"),
        (one(angle=3), "objects[0].angle: unknown key; expected one of shape, color"),
        ({"objects": [{"shape": "circle"}]}, "objects[0].color: missing"),
        ([1, 2], "expected a mapping with keys size, background, objects"),
    ],
)
def test_validation_names_the_key_and_what_is_expected(spec, message):
    with pytest.raises(ValueError) as info:
        validate_scene(spec)
    assert message in str(info.value)
    with pytest.raises(ValueError):
        render_scene(spec)  # rendering validates first


def test_valid_specs_pass_validation():
    validate_scene(FIXED)
    validate_scene(NON_SQUARE)
    validate_scene({})  # an empty white 224 px canvas


# --------------------------------------------------------------------------- VL-CheckList bins


def test_location_bin_follows_the_half_diagonal_ratio():
    # 600x800 canvas: centre (300, 400), half diagonal 500; cuts at 166.67 and 333.33 px.
    canvas = (600, 800)

    def at(dx):  # a 2x2 box whose centre is dx to the right of the image centre
        return location_bin((300 + dx - 1, 399, 2, 2), canvas)

    assert [at(0), at(166), at(167), at(333), at(334)] == [
        "center",
        "center",
        "mid",
        "mid",
        "margin",
    ]
    # The distance is Euclidean: (3, 4) * 40 = 200 px -> 0.4 -> mid.
    assert location_bin((300 + 120 - 1, 400 + 160 - 1, 2, 2), canvas) == "mid"
    # Scale-free: the same relative placement on 224 px gives the same bin.
    assert location_bin((212, 212, 12, 12), (224, 224)) == "margin"  # ratio ~0.75
    assert location_bin((100, 100, 24, 24), (224, 224)) == "center"


def test_size_bin_uses_papers_thresholds_at_640x480():
    canvas = (640, 480)  # the reference photo: thresholds are exactly 1024 and 9216 px^2
    assert size_bin((0, 0, 32, 32), canvas) == "small"
    assert size_bin((0, 0, 1025, 1), canvas) == "medium"
    assert size_bin((0, 0, 96, 96), canvas) == "medium"
    assert size_bin((0, 0, 9217, 1), canvas) == "large"


def test_size_bin_scales_with_canvas_area():
    # 224x224: k = 50176 / 307200, so S ~ 167.25 px^2 and M ~ 1505.28 px^2.
    canvas = (224, 224)
    assert math.isclose(1024 * 224 * 224 / 307200, 167.25, abs_tol=0.01)
    assert size_bin((0, 0, 12, 13), canvas) == "small"  # 156
    assert size_bin((0, 0, 13, 13), canvas) == "medium"  # 169
    assert size_bin((0, 0, 38, 39), canvas) == "medium"  # 1482
    assert size_bin((0, 0, 39, 39), canvas) == "large"  # 1521


@pytest.mark.parametrize("word", ["small", "medium", "large"])
def test_size_words_land_in_the_bin_of_the_same_name(word):
    obj = {"shape": "circle", "color": "red", "size": word, "position": [0.5, 0.5]}
    assert size_bin(object_box(obj, (224, 224)), (224, 224)) == word


# --------------------------------------------------------------------------- vlcheck render


CHECKLIST = """\
vlcheck: 1
tests:
  - id: colour
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - image: {scene: {size: 64, objects: [{shape: circle, color: red, size: 0.5,
                                             position: [0.5, 0.5]}]}}
        caption: a red circle
        negatives: [a blue circle]
      - image: {scene: {size: 64, objects: [{shape: circle, color: red, size: 0.5,
                                             position: [0.5, 0.5]}]},
                crop: [0, 0, 32, 32]}
        caption: the corner of a red circle
        negatives: [a blue circle]
  - id: gen
    capability: attribute/color
    task: image
    threshold: 0.5
    generate: {n: 4, caption: "a {a.color} {a.shape}", negatives: [replace a.color]}
"""


def test_render_command_writes_pngs_and_indexes(tmp_path):
    from PIL import Image

    from pytest_vlcheck.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(CHECKLIST)
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out)]) == 0
    pngs = sorted((out / "images").glob("*.png"))
    assert len(pngs) == 2 + 4  # full scene, its crop, two mirrored sets of two scenes
    sizes = sorted(Image.open(p).size for p in pngs)
    assert sizes[0] == (32, 32)
    html = (out / "index.html").read_text()
    md = (out / "index.md").read_text()
    for text in ("a red circle", "the corner of a red circle", "a blue circle", "gen"):
        assert text in html and text in md
    assert all(f"images/{p.name}" in html for p in pngs)
    spec = {
        "size": 64,
        "objects": [{"shape": "circle", "color": "red", "size": 0.5, "position": [0.5, 0.5]}],
    }
    rendered = {pixel_digest(Image.open(p).convert("RGB")) for p in pngs}
    assert pixel_digest(render_scene(spec)) in rendered


def test_render_command_reports_bad_input(tmp_path, capsys):
    from pytest_vlcheck.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(CHECKLIST)
    assert main(["render", str(path), "-o", str(tmp_path / "o"), "--test", "nope"]) == 2
    assert "no test 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(CHECKLIST.replace("color: red, size: 0.5", "color: teal, size: 0.5", 1))
    assert main(["render", str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "unknown colour 'teal'" in err
