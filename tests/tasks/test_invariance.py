"""The ``invariance`` task kind: strict choices, consistency by hand, YAML errors, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.images.perturb import make_perturbation
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.tasks import get_task
from pytest_vlcheck.tasks.invariance import InvarianceExample, consistency, strict_choice

IMG = ImageRef("file", "a.png", "/a.png")
JPEG = ImageRef("file", "a.png", "/a.png", perturb=make_perturbation("jpeg", 30, 0))
F = np.float32


def test_strict_choice_is_the_single_best() -> None:
    assert strict_choice(np.array([0.1, 0.3, 0.2], F)) == 1
    assert strict_choice(np.array([0.3, 0.3, 0.2], F)) is None
    assert strict_choice(np.array([0.3, np.nan], F)) is None


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([[0.3, 0.1], [0.2, 0.1]], (True, False)),  # the same choice
        ([[0.3, 0.1], [0.1, 0.2]], (False, False)),  # the choice flips
        ([[0.3, 0.1], [0.2, 0.2]], (False, True)),  # a tie where caption 0 is among the best
        ([[0.2, 0.2], [0.2, 0.2]], (False, True)),  # ties everywhere: no choice at all
        ([[0.3, 0.1, 0.0], [0.1, 0.2, 0.2]], (False, False)),  # tie, but not with the choice
        ([[0.3, 0.1], [np.nan, 0.1]], (False, False)),  # NaN: lost, not a tie
    ],
)
def test_consistency_by_hand(rows: list[list[float]], expected: tuple[bool, bool]) -> None:
    assert consistency([np.array(r, F) for r in rows]) == expected


def test_judge_by_hand() -> None:
    """Two captions, a JPEG version and a typo version: grid 2 images x 4 texts."""
    example = InvarianceExample(
        "x",
        IMG,
        ("a red circle", "a blue circle"),
        (JPEG,),
        (("typos:1", ("a rde circle", "a bleu circle")),),
    )
    nan = np.nan
    grids = [
        np.array([[0.3, 0.1, 0.2, 0.1], [0.25, 0.2, 0, 0]], F),  # 0, 0, 0: passes, right
        np.array([[0.1, 0.3, 0.0, 0.2], [0.1, 0.4, 0, 0]], F),  # 1, 1, 1: passes, wrong
        np.array([[0.3, 0.1, 0.3, 0.1], [0.1, 0.2, 0, 0]], F),  # 0, 1, 0: fails
        np.array([[0.3, 0.1, 0.2, 0.2], [0.3, 0.1, 0, 0]], F),  # 0, 0, tie: lost by a tie
        np.array([[0.3, 0.1, 0.2, 0.1], [nan, 0.1, 0, 0]], F),  # 0, NaN, 0: fails
    ]
    task = get_task("invariance")
    assert task.grid(example) == (
        (IMG, JPEG),
        ("a red circle", "a blue circle", "a rde circle", "a bleu circle"),
    )
    judged = task.judge({}, [example] * 5, grids, None)
    assert judged.correct.tolist() == [True, True, False, False, False]
    assert judged.ties.tolist() == [False, False, False, True, False]
    assert judged.metrics == {"consistent_and_right": 0.2, "original_accuracy": 0.8}
    assert judged.chance is None
    assert task.describe_failure(example, grids[2]) == (
        "a.png: original -> 'a red circle'; jpeg:30 -> 'a blue circle'; "
        "typos:1 -> 'a red circle' (first caption is true)"
    )


def _checklist(tmp_path: Path, perturbations: str, captions: str = "") -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text(
        "vlcheck: 1\n"
        "tests:\n"
        "  - id: inv\n"
        "    capability: attribute/color\n"
        "    task: invariance\n"
        "    threshold: 0.5\n"
        "    examples:\n"
        "      - id: e1\n"
        "        image: a.png\n"
        f"        caption: {captions or 'a red circle'}\n"
        "        negatives: [a blue circle]\n"
        "        perturbations:\n" + "".join(f"          - {p}\n" for p in perturbations.split(";"))
    )
    return path


def test_yaml_example_with_every_perturbation(tmp_path: Path) -> None:
    path = _checklist(
        tmp_path,
        "jpeg;{resize: 0.5};{noise: 0.05, seed: 2};hflip;{typos: 1}"
        ";{paraphrase: [a circle that is red, a circle that is blue]}",
    )
    (example,) = load_checklist(path).tests[0].examples
    assert [r.perturb.canonical() for r in example.perturbed_images][:2] == [
        "jpeg:30",
        "resize:0.5",
    ]
    assert example.perturbed_images[2].perturb.kind == "noise"
    assert [label for label, _ in example.perturbed_texts] == ["typos:1", "paraphrase"]
    assert example.perturbed_texts[1][1] == ("a circle that is red", "a circle that is blue")
    again = load_checklist(path).tests[0].examples[0]
    assert again == example  # seeds derive from the example id: the same typos and noise
    assert get_task("invariance").grid(example)[0][0] == example.image
    raw = {"negatives": ["b"], "perturbations": ["jpeg", {"typos": 1}, {"paraphrase": []}]}
    assert get_task("invariance").raw_grid_shape(raw) == (2, 6)


@pytest.mark.parametrize(
    ("perturbations", "captions", "line", "message"),
    [
        ("jpeg;{jpeg: 200}", "", 14, "'perturbations' item 2 'jpeg' is 200; expected a whole"),
        ("{blur: 2}", "", 13, "names an unknown perturbation 'blur'; expected one of jpeg"),
        ("{paraphrase: [only one]}", "", 13, "'paraphrase' must list 2 non-empty texts"),
        ("hflip", "a red circle left of a square", 13, "'hflip' changes the meaning of"),
        ("{typos: 5}", "", 13, "'typos' is 5; expected a whole number from 1 to 3"),
        ("{jpeg: 30, resize: 0.5}", "", 13, "names 2 perturbations; expected one"),
        ("{noise: 0.1, seed: x}", "", 13, "'seed' must be an integer"),
    ],
)
def test_yaml_errors_name_the_line(
    tmp_path: Path, perturbations: str, captions: str, line: int, message: str
) -> None:
    path = _checklist(tmp_path, perturbations, captions)
    with pytest.raises(ChecklistError) as caught:
        load_checklist(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert message in str(caught.value)


def test_generate_adds_perturbations_to_mirrored_examples(tmp_path: Path) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n"
        "  - id: g\n    capability: attribute/color\n    task: invariance\n    threshold: 0.5\n"
        "    generate:\n      n: 4\n      seed: 3\n      caption: 'a {a.color} {a.shape}'\n"
        "      negatives: [replace a.color]\n"
        "      perturb: [jpeg, {paraphrase: 'a {a.shape} in {a.color}'}]\n"
    )
    examples = load_checklist(path).tests[0].examples
    assert len(examples) == 4
    for example in examples:
        ((_, paraphrases),) = example.perturbed_texts
        for caption, paraphrase in zip(example.captions, paraphrases, strict=True):
            color, shape = caption.split()[1:]
            assert paraphrase == f"a {shape} in {color}"
        assert example.perturbed_images[0].perturb.canonical() == "jpeg:30"


def test_perturb_is_refused_for_other_kinds(tmp_path: Path) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n"
        "  - id: g\n    capability: attribute/color\n    task: caption\n    threshold: 0.5\n"
        "    generate: {n: 2, caption: 'a {a.color} {a.shape}', negatives: [replace a.color],"
        " perturb: [jpeg]}\n"
    )
    with pytest.raises(ChecklistError, match=r"gen.yaml:7: generate: perturb: only invariance"):
        load_checklist(path)


E2E = """\
vlcheck: 1
image_root: images
tests:
  - id: inv
    capability: attribute/color
    task: invariance
    threshold: 0.5
    examples:
      - {id: r, image: red.png, caption: red, negatives: [blue], perturbations: [jpeg, {resize: 0.5}, hflip]}
      - {id: b, image: blue.png, caption: red, negatives: [blue], perturbations: [{brightness: 0.3}]}
      - {id: t, image: red.png, caption: red, negatives: [blue], perturbations: [{paraphrase: [blue, red]}]}
"""


def test_end_to_end_row_has_no_chance_level(pytester: pytest.Pytester) -> None:
    images = pytester.mkdir("images")
    Image.new("RGB", (16, 16), (220, 20, 20)).save(images / "red.png")
    Image.new("RGB", (16, 16), (20, 20, 220)).save(images / "blue.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", checks=E2E)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--vl-model=py:colour_model:make", "--vl-report=report", "-p", "no:cacheprovider", "-rA"
    )
    result.assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "report" / "matrix.json").read_text())["results"]
    assert row["chance"] is None
    assert "no chance level" in (pytester.path / "report" / "matrix.md").read_text()
    assert (row["n"], row["passed"]) == (3, 2)  # the swapped paraphrase flips the choice
    assert row["metrics"] == {
        "consistent_and_right": pytest.approx(1 / 3),
        "original_accuracy": pytest.approx(2 / 3),
    }


SCORED = (  # E2E's test with one example of one perturbed image
    E2E[: E2E.index("      - ")]
    + "      - {id: r, image: red.png, caption: red, negatives: [blue], perturbations: [jpeg]}\n"
)


def test_a_scores_file_scores_a_perturbed_image_in_its_own_lines(
    pytester: pytest.Pytester,
) -> None:
    """A perturbed image is not its original: without lines of its own it has no score, and
    with them the choice may flip (here it does, so the test fails)."""
    pytester.makefile(".yaml", checks=SCORED)
    lines = [{"image": "red.png", "text": "red", "score": 0.9}]
    lines.append({"image": "red.png", "text": "blue", "score": 0.1})
    scores = pytester.path / "s.jsonl"
    scores.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = pytester.runpytest("--vl-model=scores:s.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*s.jsonl has no score for image 'red.png' perturb=jpeg:30 with text 'red' (example 'r')*"]
    )
    lines.append({"image": "red.png", "perturb": "jpeg:30", "text": "red", "score": 0.2})
    lines.append({"image": "red.png", "perturb": "jpeg:30", "text": "blue", "score": 0.8})
    scores.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = pytester.runpytest("--vl-model=scores:s.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*attribute/color: 0.0% (0/1, *"])
