"""The checklist JSON Schema: bundled checklists validate; files the loader rejects fail it too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.checklist.bundled import GENERATIVE, bundled_checklists
from pytest_vlcheck.cli import main
from pytest_vlcheck.cli.schema import schema_text

jsonschema = pytest.importorskip("jsonschema")

GOOD = """\
vlcheck: 1
tests:
  - id: t
    capability: object/existence
    task: caption
    threshold: 0.5
    examples:
      - {image: a.png, caption: a cat, negatives: [a dog]}
"""
GOOD_SHAPES = """\
vlcheck: 1
image_root: imgs
tests:
  - {id: i, capability: object/x, task: image, threshold: 0.5,
     examples: [{text: [a cat, a photo of a cat], image: {path: a.png, crop: [0, 0, 5, 5]},
                 distractors: [{url: "https://x.org/b.png", sha256: "%s"}]}]}
  - {id: g, capability: order/x, task: group, threshold: 0.5, criterion: text,
     examples: [{images: [a.png, {path: b.png, crop_relative: [0, 0, 0.5, 0.5]}],
                 captions: [x y, y x], tags: {kind: swap, n: 2}}]}
  - {id: c, capability: order/x, task: caption, threshold: 0.5, ties: first, all_of: [pair, set],
     examples: [{image: a.png, captions: [a cat, a cat sitting], negatives: [a dog],
                 tags: {pair: p1, set: s1}}]}
  - {id: m, capability: verb/x, task: match, threshold: 0.5, cutoff: 0.3,
     examples: [{image: a.png, caption: a cat, label: no_match, neg_type: verb, id: 7}]}
  - {id: t, capability: relation/x, task: text, threshold: 0.5, symmetric: true, ties: first,
     examples: [{anchor: a cat on a mat, positive: a cat sitting on a mat, negatives: [a mat]}]}
""" % ("a" * 64)

# (what is wrong, the text) -- each is rejected by the loader and must be by the schema
MALFORMED = [
    ("format version", GOOD.replace("vlcheck: 1", "vlcheck: 2")),
    ("unknown file key", GOOD.replace("tests:", "extra: 1\ntests:")),
    ("threshold above 1", GOOD.replace("threshold: 0.5", "threshold: 1.5")),
    ("unknown task", GOOD.replace("task: caption", "task: captions")),
    ("unknown test key", GOOD.replace("threshold: 0.5", "threshold: 0.5\n    thresold: 0.5")),
    ("capability case", GOOD.replace("object/existence", "Object/Existence")),
    ("missing negatives", GOOD.replace(", negatives: [a dog]", "")),
    ("empty negatives", GOOD.replace("[a dog]", "[]")),
    ("examples and generate", GOOD.replace("    examples:", "    generate: {n: 2}\n    examples:")),
    ("no examples", GOOD.split("    examples:")[0]),
    ("criterion on caption", GOOD.replace("task: caption", "task: caption\n    criterion: text")),
    ("ties on group", GOOD_SHAPES.replace("criterion: text,", "criterion: text, ties: first,")),
    ("caption and captions", GOOD.replace("caption: a cat,", "caption: a cat, captions: [a cat],")),
    ("empty captions", GOOD.replace("caption: a cat,", "captions: [],")),
    ("all_of twice", GOOD.replace("task: caption", "task: caption\n    all_of: [pair, pair]")),
    ("symmetric on caption", GOOD.replace("task: caption", "task: caption\n    symmetric: true")),
    ("text without positive", GOOD_SHAPES.replace("positive: a cat sitting on a mat, ", "")),
    ("unknown tie rule", GOOD.replace("task: caption", "task: caption\n    ties: random")),
    (
        "image with two sources",
        GOOD.replace("image: a.png", "image: {path: a.png, url: 'https://x/y'}"),
    ),
    (
        "crop of three numbers",
        GOOD.replace("image: a.png", "image: {path: a.png, crop: [1, 2, 3]}"),
    ),
    (
        "group with one caption",
        GOOD.replace("task: caption", "task: group").replace(
            "{image: a.png, caption: a cat, negatives: [a dog]}",
            "{images: [a.png, b.png], captions: [a]}",
        ),
    ),
    (
        "match label",
        GOOD.replace("task: caption", "task: match").replace("negatives: [a dog]", "label: maybe"),
    ),
    ("bad test id", GOOD.replace("id: t", "id: 't t'")),
    (
        "macro judge as a word",
        GOOD.replace("examples:", "macro: {tag: c, judge: mean}\n    examples:"),
    ),
]


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(schema_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(
    "path",
    [*bundled_checklists(), *bundled_checklists(GENERATIVE)],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_bundled_checklists_validate(validator, path: Path) -> None:
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_every_example_shape_validates(validator, tmp_path: Path) -> None:
    for text in (GOOD, GOOD_SHAPES):
        path = tmp_path / "c.yaml"
        path.write_text(text)
        load_checklist(path)
        assert list(validator.iter_errors(yaml.safe_load(text))) == []


def test_keys_being_added_are_accepted(validator) -> None:
    doc = yaml.safe_load(GOOD)
    doc["tests"][0].update(
        examples="color.jsonl",
        hard_threshold=0.6,
        macro={"tag": "color", "min_count": 5, "exclude": ["gray"], "judge": True},
    )
    assert list(validator.iter_errors(doc)) == []
    doc["tests"][0]["hard_threshold"] = 2
    assert not validator.is_valid(doc)


@pytest.mark.parametrize(("what", "text"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_rejected_by_loader_and_schema(
    validator, tmp_path: Path, what: str, text: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ChecklistError):
        load_checklist(path)
    assert not validator.is_valid(yaml.safe_load(text)), what


def test_schema_command_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert printed == json.loads(schema_text())


def test_macro_judge_is_a_boolean_for_loader_and_schema(validator, tmp_path: Path) -> None:
    """``judge: true`` (README: ``macro: {tag, min_count, exclude, judge: true}``) loads and
    validates; the schema once declared a string, flagging every correct file."""
    text = GOOD.replace(
        "examples:", "macro: {tag: c, min_count: 1, exclude: [x], judge: true}\n    examples:"
    ).replace("negatives: [a dog]", "negatives: [a dog], tags: {c: v}")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert load_checklist(path).tests[0].macro.judge is True
    assert [e.message for e in validator.iter_errors(yaml.safe_load(text))] == []


def test_the_task_kinds_come_from_the_registry() -> None:
    from pytest_vlcheck.checklist.json_schema import checklist_schema
    from pytest_vlcheck.tasks import TASKS

    schema = checklist_schema()
    test = schema["$defs"]["test"]
    assert test["properties"]["task"]["enum"] == list(TASKS)
    for kind, task in TASKS.items():
        assert schema["$defs"][f"{kind}_example"] == task.example_schema
    owners = {
        rule["if"]["required"][0]: rule["then"]["properties"]["task"]
        for rule in test["allOf"]
        if "task" not in rule["if"].get("properties", {})
    }
    assert owners == {
        "ties": {"enum": ["caption", "image", "text", "choice"]},
        "symmetric": {"const": "text"},
        "criterion": {"const": "group"},
        "cutoff": {"const": "match"},
        "decide": {"const": "match"},
        "scoring": {"const": "choice"},
        "rotate": {"const": "choice"},
        "prompt": {"enum": ["choice", "answer"]},
        "max_new_tokens": {"enum": ["choice", "answer"]},
        "compare": {"const": "answer"},
    }


def test_the_schema_types_every_scene_key(validator, tmp_path: Path) -> None:
    from pytest_vlcheck.checklist.json_schema import checklist_schema
    from pytest_vlcheck.images.scenes import SHAPES, TEXTURES

    scene = checklist_schema()["$defs"]["scene"]
    obj = scene["properties"]["objects"]["items"]
    assert obj["properties"]["shape"]["enum"] == list(SHAPES)
    assert obj["properties"]["texture"]["enum"] == list(TEXTURES)
    good = {"size": [96, 64], "background": [250, 250, 250],
            "objects": [{"shape": "star", "color": "red", "size": "small",
                         "position": [0.5, 0.5], "hollow": True}]}  # fmt: skip
    for bad in (
        {**good, "size": 8},  # below the smallest canvas
        {**good, "objects": [{**good["objects"][0], "shape": "blob"}]},
        {**good, "objects": [{**good["objects"][0], "position": [0.5, 1.5]}]},
        {**good, "objects": [{**good["objects"][0], "colour": "red"}]},
        {**good, "background": [300, 0, 0]},
    ):
        for scene_spec, ok in ((good, True), (bad, False)):
            doc = yaml.safe_load(GOOD)
            doc["tests"][0]["examples"][0]["image"] = {"scene": scene_spec}
            path = tmp_path / "scene.yaml"
            path.write_text(yaml.safe_dump(doc))
            assert validator.is_valid(doc) is ok, scene_spec
            if ok:
                load_checklist(path)
            else:
                with pytest.raises(ChecklistError):
                    load_checklist(path)
