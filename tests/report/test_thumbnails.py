"""Thumbnails of failing examples: cropped as scored, scenes rendered, content-named, embedded."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.refs import ImageRef, canonical_scene
from pytest_vlcheck.images.scenes import render_scene
from pytest_vlcheck.report import read_matrix, write_report
from pytest_vlcheck.report.thumbnails import (
    copy_thumbnails,
    thumbnail_data_uris,
    thumbnail_names,
    write_thumbnails,
)
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ModelMeta

SCENE = {"objects": [{"shape": "circle", "color": "red", "position": [0.5, 0.5], "size": 0.5}]}


def typed(rows: list[dict]) -> list[CapabilityResult]:
    """Result rows (``to_json`` form) as the results the report functions take."""
    return [CapabilityResult.from_json(row) for row in rows]


def halves(path: Path) -> Path:
    """A 300 x 200 image: the left half red, the right half green."""
    image = Image.new("RGB", (300, 200), (220, 20, 20))
    image.paste((20, 200, 20), (150, 0, 300, 200))
    image.save(path)
    return path


def decoded(directory: Path, name: str) -> Image.Image:
    return Image.open(io.BytesIO((directory / name).read_bytes())).convert("RGB")


def test_thumbnail_is_cropped_as_scored_and_128px(tmp_path: Path) -> None:
    source = halves(tmp_path / "halves.png")
    whole = ImageRef("file", "halves.png", str(source))
    right = ImageRef("file", "halves.png", str(source), crop=(0.5, 0, 0.5, 1), crop_relative=True)
    out = tmp_path / "thumbnails"
    names = write_thumbnails([whole, right], ImageLoader(), out)
    assert len(names) == 2 and names[0] != names[1]
    assert decoded(out, names[0]).size == (128, 85)  # longest side 128, aspect kept
    cropped = decoded(out, names[1])
    assert cropped.size == (96, 128)  # the 150 x 200 crop, not the whole image
    r, g, _ = cropped.getpixel((64, 64))
    assert g > 150 and r < 80  # the green half only


def test_scene_thumbnail_is_the_rendered_scene(tmp_path: Path) -> None:
    ref = ImageRef("scene", canonical_scene(SCENE), canonical_scene(SCENE))
    out = tmp_path / "thumbnails"
    [name] = write_thumbnails([ref], ImageLoader(), out)
    expected = render_scene(SCENE)
    expected.thumbnail((128, 128))
    thumb = decoded(out, name)
    assert thumb.size == expected.size
    centre = (thumb.width // 2, thumb.height // 2)
    assert all(
        abs(a - b) < 30
        for a, b in zip(thumb.getpixel(centre), expected.getpixel(centre), strict=True)
    )


def test_same_pixels_same_file_and_unloadable_gives_none(tmp_path: Path) -> None:
    source = halves(tmp_path / "a.png")
    copy = halves(tmp_path / "b.png")
    out = tmp_path / "thumbnails"
    first = write_thumbnails([ImageRef("file", "a.png", str(source))], ImageLoader(), out)
    again = write_thumbnails([ImageRef("file", "b.png", str(copy))], ImageLoader(), out)
    assert first == again and len(list(out.iterdir())) == 1
    missing = ImageRef("file", "gone.png", str(tmp_path / "gone.png"))
    ok = ImageRef("file", "a.png", str(source))
    assert write_thumbnails([ok, missing], ImageLoader(), out) == []


def test_data_uris_only_for_thumbnail_names_in_the_folder(tmp_path: Path) -> None:
    source = halves(tmp_path / "a.png")
    [name] = write_thumbnails(
        [ImageRef("file", "a.png", str(source))], ImageLoader(), tmp_path / "thumbnails"
    )
    (tmp_path / "secret.txt").write_text("not an image")
    uris = thumbnail_data_uris(tmp_path, [name, "../secret.txt", "0123456789abcdef.jpg"])
    assert list(uris) == [name]
    payload = base64.b64decode(uris[name].removeprefix("data:image/jpeg;base64,"))
    assert payload == (tmp_path / "thumbnails" / name).read_bytes()
    copy_thumbnails(tmp_path, tmp_path / "elsewhere", [name, "../secret.txt"])
    assert [p.name for p in (tmp_path / "elsewhere" / "thumbnails").iterdir()] == [name]


CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.9
    examples:
      - {id: r, image: red.png, caption: red, negatives: [green]}
      - {id: h, image: {path: halves.png, crop_relative: [0.5, 0, 0.5, 1]}, caption: red, negatives: [green]}
      - {id: s, image: {scene: {objects: [{shape: circle, color: blue, position: [0.5, 0.5], size: 0.9}]}}, caption: red, negatives: [blue]}
      - {id: m, image: missing.png, caption: red, negatives: [green]}
"""


def test_run_writes_thumbnails_of_kept_failures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", thumbs=CHECKLIST)
    Image.new("RGB", (64, 64), (220, 20, 20)).save(pytester.path / "red.png")
    halves(pytester.path / "halves.png")
    result = pytester.runpytest(
        "--vl-model=py:colour_model:make", "--vl-report=rep", "--vl-missing=skip"
    )
    result.assert_outcomes(failed=1)
    rep = pytester.path / "rep"
    [row] = json.loads((rep / "matrix.json").read_text())["results"]
    failures = {f["id"]: f for f in row["failures"]}
    assert set(failures) == {"h", "s"}  # the red image passed; the missing one was not scored
    assert all(len(f["thumbnails"]) == 1 for f in failures.values())
    names = thumbnail_names(typed([row]))
    assert sorted(p.name for p in (rep / "thumbnails").iterdir()) == sorted(names)
    assert decoded(rep / "thumbnails", failures["h"]["thumbnails"][0]).getpixel((5, 5))[1] > 150
    # matrix.json names the files and holds no pixels
    assert "base64" not in (rep / "matrix.json").read_text()
    _, results = read_matrix(rep / "matrix.json")
    assert results[0].failures[0].thumbnails == failures["h"]["thumbnails"]


def test_report_rendered_elsewhere_keeps_its_thumbnails(tmp_path: Path) -> None:
    source = halves(tmp_path / "a.png")
    [name] = write_thumbnails(
        [ImageRef("file", "a.png", str(source))], ImageLoader(), tmp_path / "run" / "thumbnails"
    )
    models = [ModelMeta("m", "py:x:y", "")]
    row = {
        "file": "t.yaml",
        "test": "t",
        "capability": "a/b",
        "task": "caption",
        "model": "m",
        "n": 1,
        "passed": 0,
        "pass_rate": 0.0,
        "ci_low": 0.0,
        "ci_high": 0.79,
        "threshold": 0.5,
        "chance": 0.5,
        "status": "failed",
        "failures": [
            {
                "id": "1",
                "images": ["a.png"],
                "texts": ["x", "y"],
                "scores": [[0.1, 0.2]],
                "detail": "",
                "thumbnails": [name],
            }
        ],
    }
    stale = tmp_path / "out" / "thumbnails" / "0123456789abcdef.jpg"  # an earlier run's
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    write_report(tmp_path / "out", models, typed([row]), thumbnail_source=tmp_path / "run")
    assert (tmp_path / "out" / "thumbnails" / name).read_bytes() == (
        tmp_path / "run" / "thumbnails" / name
    ).read_bytes()
    assert [p.name for p in (tmp_path / "out" / "thumbnails").iterdir()] == [name]
    row["status"], row["failures"] = "passed", []  # re-rendered in place, naming none
    write_report(tmp_path / "out", models, typed([row]))
    assert not (tmp_path / "out" / "thumbnails").exists()
