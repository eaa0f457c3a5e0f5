"""Checklist loading: typed objects, resolved images, and FILE:LINE errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vlcheck.checklist import ChecklistError, is_checklist_file, load_checklist
from pytest_vlcheck.tasks.caption.example import CaptionExample
from pytest_vlcheck.tasks.group import GroupExample
from pytest_vlcheck.tasks.image import ImageExample
from pytest_vlcheck.tasks.match import MatchExample

VALID = """\
vlcheck: 1
image_root: imgs
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.75
    examples:
      - image: a.jpg
        caption: a red apple
        negatives: [a green apple]
        tags: {size: small, count: 2}
        id: "x-0"
      - image: {path: b.jpg, crop: [1, 2, 30, 40]}
        caption: a red car
        negatives: [a blue car, a green car]
  - id: compound
    capability: compound/noun
    task: image
    threshold: 0.5
    examples:
      - text: [a photo of a bus stop, a bus stop]
        image: c.jpg
        distractors: [c_n1.jpg, {path: c_n2.jpg, crop_relative: [0.1, 0.1, 0.5, 0.5]}]
  - id: pairs
    capability: relation/action
    task: group
    threshold: 0.25
    criterion: text
    examples:
      - images: [a.jpg, b.jpg]
        captions: [a man is sitting, a woman is sitting]
  - id: itm
    capability: relation/action
    task: match
    threshold: 0.5
    cutoff: 0.4
    examples:
      - {image: {url: "https://example.org/x.jpg"}, caption: a dog runs, label: match}
      - {image: a.jpg, caption: a cat runs, label: no_match, neg_type: subject}
"""


def write(tmp_path: Path, text: str, name: str = "check.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_valid_checklist_loads_typed_objects(tmp_path: Path) -> None:
    checklist = load_checklist(write(tmp_path, VALID))
    color, compound, pairs, itm = checklist.tests
    first, second = color.examples
    assert isinstance(first, CaptionExample) and first.id == "x-0"
    assert first.tags == {"size": "small", "count": "2"}
    assert first.image.written == "a.jpg"
    assert first.image.location == str((tmp_path / "imgs" / "a.jpg").resolve())
    assert second.image.crop == (1, 2, 30, 40) and second.negatives == ("a blue car", "a green car")
    assert color.line == 4 and first.line == 9
    ex = compound.examples[0]
    assert isinstance(ex, ImageExample) and ex.texts == ("a photo of a bus stop", "a bus stop")
    assert ex.distractors[1].crop_relative
    assert isinstance(pairs.examples[0], GroupExample) and pairs.criterion == "text"
    match0, match1 = itm.examples
    assert isinstance(match0, MatchExample) and match0.label and match0.image.kind == "url"
    assert not match1.label and match1.neg_types == ("subject",) and itm.settings["cutoff"] == 0.4


def test_several_true_captions_and_a_tie_rule_load(tmp_path: Path) -> None:
    text = VALID.replace(
        "        caption: a red apple\n", "        captions: [a red apple, an apple that is red]\n"
    )
    text = text.replace("    task: caption\n", "    task: caption\n    ties: first\n", 1)
    color = load_checklist(write(tmp_path, text)).tests[0]
    first, second = color.examples
    assert first.captions == ("a red apple", "an apple that is red")
    assert second.captions == ("a red car",)
    assert color.settings == {"ties": "first"}
    text = text.replace("    ties: first\n", "    ties: first\n    all_of: size\n", 1)
    assert load_checklist(write(tmp_path, text, "b.yaml")).tests[0].all_of == ("size",)
    # a tag no example carries would measure nothing: an error at the key
    text = text.replace("    all_of: size\n", "    all_of: pair\n", 1)
    with pytest.raises(
        ChecklistError,
        match=r"b.yaml:\d+: 'all_of' names the tag 'pair', which "
        r"no example of the test has; the examples' tags: count, size",
    ):
        load_checklist(write(tmp_path, text, "b.yaml"))


def test_derived_example_ids_are_stable_and_content_based(tmp_path: Path) -> None:
    first = load_checklist(write(tmp_path, VALID)).tests[0].examples[1].id
    reordered = VALID.replace("      - image: a.jpg\n", "      - image: a.jpg\n", 1)
    assert load_checklist(write(tmp_path, reordered, "b.yaml")).tests[0].examples[1].id == first
    assert len(first) == 12


def test_image_root_option_overrides_file(tmp_path: Path) -> None:
    checklist = load_checklist(write(tmp_path, VALID), image_root=tmp_path / "elsewhere")
    ref = checklist.tests[0].examples[0].image
    assert ref.location == str((tmp_path / "elsewhere" / "a.jpg").resolve())


def test_is_checklist_file(tmp_path: Path) -> None:
    assert is_checklist_file(write(tmp_path, VALID))
    assert not is_checklist_file(write(tmp_path, "other: 1\n", "x.yaml"))
    assert not is_checklist_file(write(tmp_path, VALID, "x.txt"))


BAD = {
    "bad yaml": ("tests: [\n  - id: a\n", 2, "invalid YAML"),
    "unknown key": (
        VALID.replace("    threshold: 0.75", "    treshold: 0.75"),
        7,
        "unknown key 'treshold' in test 'color' (did you mean 'threshold'?)",
    ),
    "wrong type": (
        VALID.replace("negatives: [a green apple]", "negatives: a green apple"),
        11,
        "'negatives' must be a list, got a string",
    ),
    "empty examples": (
        VALID.replace(
            """    examples:
      - image: a.jpg
        caption: a red apple
        negatives: [a green apple]
        tags: {size: small, count: 2}
        id: "x-0"
      - image: {path: b.jpg, crop: [1, 2, 30, 40]}
        caption: a red car
        negatives: [a blue car, a green car]
""",
            "    examples: []\n",
        ),
        8,
        "'examples' has 0 items; expected at least 1",
    ),
    "threshold out of range": (
        VALID.replace("threshold: 0.75", "threshold: 1.5"),
        7,
        "'threshold' is 1.5; expected a number from 0 to 1",
    ),
    "duplicate test id": (
        VALID.replace("id: compound", "id: color"),
        17,
        "duplicate test id 'color' (first used on line 4)",
    ),
    "unknown task": (
        VALID.replace("task: caption", "task: captions"),
        6,
        "'task' is 'captions' (did you mean 'caption'?)",
    ),
    "missing key": (
        VALID.replace("        caption: a red apple\n", ""),
        9,
        "needs exactly one of 'caption' or 'captions'",
    ),
    "caption and captions": (
        VALID.replace(
            "        caption: a red apple\n",
            "        caption: a red apple\n        captions: [a red apple]\n",
        ),
        9,
        "needs exactly one of 'caption' or 'captions'",
    ),
    "bad crop": (
        VALID.replace("crop: [1, 2, 30, 40]", "crop: [1, 2, 0, 40]"),
        14,
        "expected x, y >= 0 and width, height > 0",
    ),
    "group needs two images": (
        VALID.replace("images: [a.jpg, b.jpg]", "images: [a.jpg]"),
        31,
        "'images' has 1 items; expected exactly 2",
    ),
    "bad label": (VALID.replace("label: no_match", "label: maybe"), 40, "'label' is 'maybe'"),
    "criterion on caption": (
        VALID.replace("    task: caption\n", "    task: caption\n    criterion: text\n"),
        7,
        "'criterion' applies to group tests only",
    ),
    "ties on group": (
        VALID.replace("    task: group\n", "    task: group\n    ties: first\n"),
        28,
        "'ties' applies to caption, image, text, choice tests only, not 'group'",
    ),
    "bad ties rule": (
        VALID.replace("    task: caption\n", "    task: caption\n    ties: random\n"),
        7,
        "'ties' is 'random'; expected one of: fail, first, last, order",
    ),
    "ties order on a group test": (
        VALID.replace("    task: group\n", "    task: group\n    ties: order\n"),
        28,
        "'ties' applies to caption, image, text, choice tests only, not 'group'",
    ),
    "image position past the distractors": (
        VALID.replace("        image: c.jpg\n", "        image: c.jpg\n        position: 3\n"),
        24,
        "'position' is 3; expected a number from 0 to 2",
    ),
    "position past the negatives": (
        VALID.replace(
            "negatives: [a green apple]", "negatives: [a green apple]\n        position: 2"
        ),
        12,
        "'position' is 2; expected a number from 0 to 1",
    ),
    "position not whole": (
        VALID.replace(
            "negatives: [a green apple]", "negatives: [a green apple]\n        position: 0.5"
        ),
        12,
        "'position' is 0.5; expected a whole number 0-1",
    ),
    "all_of twice": (
        VALID.replace("    task: caption\n", "    task: caption\n    all_of: [pair, pair]\n"),
        7,
        "'all_of' names 'pair' twice; expected each tag once",
    ),
    "all_of mapping": (
        VALID.replace("    task: caption\n", "    task: caption\n    all_of: {tag: pair}\n"),
        7,
        "'all_of' is a mapping; expected a tag name or a list of tag names",
    ),
    "duplicate yaml key": (
        VALID.replace("    threshold: 0.75\n", "    threshold: 0.75\n    threshold: 0.5\n"),
        8,
        "duplicate key 'threshold'",
    ),
    "version": (VALID.replace("vlcheck: 1", "vlcheck: 2"), 1, "'vlcheck' is 2"),
    "blank test id": (VALID.replace("  - id: color", '  - id: " "'), 4, "got a blank string"),
    "blank example id": (VALID.replace('id: "x-0"', 'id: "  "'), 13, "'id' is blank"),
    "blank tag name": (VALID.replace("{size: small,", "{'': small,"), 12, "a tag name is blank"),
    "min_count below 1": (
        VALID.replace(
            "    threshold: 0.75\n", "    threshold: 0.75\n    macro: {tag: size, min_count: 0}\n"
        ),
        8,
        "'min_count' is 0; expected a finite number of at least 1",
    ),
    "crop and crop_relative": (
        VALID.replace("crop: [1, 2, 30, 40]", "crop: [1, 2, 30, 40], crop_relative: [0, 0, 1, 1]"),
        14,
        "give 'crop' (pixels) or 'crop_relative' (fractions), not both",
    ),
    "both image sources": (
        VALID.replace("{path: b.jpg, crop", "{path: b.jpg, url: 'http://x', crop"),
        14,
        "needs exactly one of 'path', 'url' or 'scene'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_checklists_give_file_line_messages(tmp_path: Path, case: str) -> None:
    text, line, message = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert message in str(info.value)
