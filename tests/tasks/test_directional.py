"""The ``directional`` task kind: strict moves by hand, ties, YAML errors, occlusion, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.tasks import get_task
from pytest_vlcheck.tasks.directional import DirectionalExample, moved

IMG = ImageRef("file", "a.png", "/a.png")
IMG2 = ImageRef("file", "b.png", "/b.png")
F = np.float32


def test_moved_is_strict() -> None:
    original = np.array([0.5, 0.5, 0.5, 0.5, 0.5, np.nan], F)
    changed = np.array([0.4, 0.5, 0.6, 0.6, 0.5, 0.1], F)
    expect = ["lower", "lower", "lower", "higher", "higher", "lower"]
    assert moved(original, changed, expect).tolist() == [True, False, False, True, False, False]


def test_judge_by_hand() -> None:
    task = get_task("directional")
    text = DirectionalExample(
        "t", IMG, "a photo of a dog", "lower", changed_text="a photo of no dog"
    )
    image = DirectionalExample("i", IMG, "a dog", "higher", changed_image=IMG2)
    assert task.grid(text) == ((IMG,), ("a photo of a dog", "a photo of no dog"))
    assert task.grid(image) == ((IMG, IMG2), ("a dog",))
    grids = [
        np.array([[0.30, 0.20]], F),  # text lower by 0.1: passes
        np.array([[0.30, 0.30]], F),  # unchanged: a tie, fails
        np.array([[0.20], [0.25]], F),  # image higher by 0.05: passes
        np.array([[0.20], [0.10]], F),  # image lower by 0.1: fails
    ]
    judged = task.judge({}, [text, text, image, image], grids, None)
    assert judged.correct.tolist() == [True, False, True, False]
    assert judged.ties.tolist() == [False, True, False, False]
    assert judged.metrics["mean_change"] == pytest.approx((-0.1 + 0 + 0.05 - 0.1) / 4, abs=1e-6)
    assert judged.chance == 0.5
    assert task.describe_failure(text, grids[1]) == (
        "a.png: 'a photo of a dog' 0.3000 -> 'a photo of no dog' 0.3000; expected lower"
    )
    assert task.describe_failure(image, grids[3]) == (
        "'a dog' on a.png 0.2000 -> b.png 0.1000; expected higher"
    )


def _checklist(tmp_path: Path, example: str) -> Path:
    path = tmp_path / "dir.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n  - id: d\n    capability: object/negation\n"
        "    task: directional\n    threshold: 0.5\n    examples:\n"
        f"      - {{image: a.png, text: a dog, {example}}}\n"
    )
    return path


@pytest.mark.parametrize(
    ("example", "message"),
    [
        ("expect: lower", "needs exactly one of 'changed_text' or 'changed_image'"),
        ("changed_text: no dog, changed_image: b.png, expect: lower", "needs exactly one of"),
        ("changed_text: no dog, expect: down", "'expect' is 'down'"),
        ("changed_text: a dog, expect: lower", "'changed_text' is the same as 'text'"),
        ("changed_image: a.png, expect: lower", "'changed_image' is the same as 'image'"),
        ("changed_text: no dog", "missing the required key 'expect'"),
    ],
)
def test_yaml_errors_name_the_line(tmp_path: Path, example: str, message: str) -> None:
    path = _checklist(tmp_path, example)
    with pytest.raises(ChecklistError) as caught:
        load_checklist(path)
    assert str(caught.value).startswith(f"{path}:8: ")
    assert message in str(caught.value)


def test_generated_occlusion_hides_object_a_and_negation_changes_the_text(tmp_path: Path) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n"
        "  - id: g\n    capability: object/existence\n    task: directional\n    threshold: 0.5\n"
        "    generate:\n      n: 6\n      caption: 'a photo of a {a.shape}'\n      extras: 1\n"
        "      perturb: [{occlude: a}, {text: 'a photo of no {a.shape}', expect: lower}]\n"
    )
    examples = load_checklist(path).tests[0].examples
    assert len(examples) == 6
    occluded, negated = examples[0], examples[1]
    scene = json.loads(occluded.image.location)
    changed = json.loads(occluded.changed_image.location)
    shape = occluded.text.split()[-1]
    hidden = [o for o in changed["objects"] if o.get("hidden")]
    assert [o["shape"] for o in hidden] == [shape]
    assert [dict(o, hidden=False) for o in changed["objects"]] == [
        dict(o, hidden=False) for o in scene["objects"]
    ]
    assert negated.changed_text == f"a photo of no {negated.text.split()[-1]}"
    assert (occluded.expect, negated.expect) == ("lower", "lower")


E2E = """\
vlcheck: 1
image_root: images
tests:
  - id: dir
    capability: object/negation
    task: directional
    threshold: 0.6
    examples:
      - {id: t, image: red.png, text: red, changed_text: blue, expect: lower}
      - {id: i, image: red.png, text: blue, changed_image: blue.png, expect: higher}
      - {id: tie, image: red.png, text: red square, changed_text: red circle, expect: lower}
"""


def test_end_to_end_counts_the_tie(pytester: pytest.Pytester) -> None:
    images = pytester.mkdir("images")
    Image.new("RGB", (16, 16), (220, 20, 20)).save(images / "red.png")
    Image.new("RGB", (16, 16), (20, 20, 220)).save(images / "blue.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", checks=E2E)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--vl-model=py:colour_model:make", "--vl-report=report", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "report" / "matrix.json").read_text())["results"]
    assert (row["n"], row["passed"], row["ties"], row["chance"]) == (3, 2, 1, 0.5)
