"""Generated questions (``question:``/``answer:`` in ``generate:``) and the generative suite.

Every answer is checked against the scene spec by an oracle written here from the scene's
objects (counts, colours, presence, positions), not from the generator's own assignment: the
right option, the accepted answer and the yes/no label must be true of the image drawn.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from test_generators import holds

from pytest_vlcheck.checklist import ChecklistError
from pytest_vlcheck.checklist.bundled import (
    GENERATIVE,
    bundled_checklists,
    bundled_checklists_dir,
    from_report_name,
    report_name,
)
from pytest_vlcheck.checklist.generators import expand
from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.images.scenes import SHAPE_PLURALS

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / GENERATIVE
PHRASING = {  # the agreed templates (tiny-vlm is trained on the same ones), slots written out
    "How many {a.shapes} are there?",
    "What color is the {a.shape}?",
    "Is there a {a.shape} in the image?",
    "Is the {a.shape} not {a.color}?",
    "Is the {a.color} {a.shape} {relation} the {b.color} {b.shape}?",
}
RELATIONS = "to the left of|to the right of|above|below|inside"
SHAPE_OF = {**{s: s for s in SHAPE_PLURALS}, **{p: s for s, p in SHAPE_PLURALS.items()}}


def suite_tests() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(SUITE.glob("*.yaml")):
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            out.append((f"{path.name}::{test['id']}", test))
    return out


SUITE_TESTS = suite_tests()


def shown(scene: dict, shape: str) -> list[dict]:
    return [o for o in scene["objects"] if o["shape"] == shape and not o.get("hidden")]


def oracle(question: str, scene: dict) -> str:
    """The right answer to one of the agreed questions, read off the scene's objects."""
    if m := re.fullmatch(r"How many (\w+) are there\?", question):
        return str(len(shown(scene, SHAPE_OF[m[1]])))
    if m := re.fullmatch(r"What color is the (\w+)\?", question):
        (obj,) = shown(scene, m[1])
        return obj["color"]
    if m := re.fullmatch(r"Is there an? (\w+) in the image\?", question):
        return "Yes" if shown(scene, m[1]) else "No"
    if m := re.fullmatch(r"Is the (\w+) not (\w+)\?", question):
        (obj,) = shown(scene, m[1])
        return "Yes" if obj["color"] != m[2] else "No"
    if m := re.fullmatch(rf"Is the (.+) ({RELATIONS}) the (.+)\?", question):
        return "Yes" if holds(f"a {m[1]} {m[2]} a {m[3]}", scene) else "No"
    raise AssertionError(f"not an agreed question: {question!r}")


def right_answers(example: dict) -> tuple[str, list[str]]:
    """(the oracle's answer, the answers the example accepts as right)."""
    scene = example["image"]["scene"]
    truth = oracle(example["question"], scene)
    if "options" in example:
        return truth, [example["options"][example["answer"]]]
    if "answers" in example:
        return truth, example["answers"]
    return truth, ["Yes" if example["label"] == "match" else "No"]


# --------------------------------------------------------------------------- hand-checked


def test_a_counting_question_by_hand():
    """Read off the first example: two green hearts, no other heart; the set's four counts."""
    spec = {
        "n": 4,
        "seed": 1401,
        "question": "How many {a.shapes} are there?",
        "answer": "{number}",
        "negatives": [{"replace": "count", "k": 3}],
    }
    examples = expand(spec, "answer")
    first = examples[0]
    assert first["question"] == "How many hearts are there?"
    assert first["answers"] == ["2"]
    assert [o["shape"] for o in first["image"]["scene"]["objects"]] == ["heart", "heart"]
    assert sorted(e["answers"][0] for e in examples) == ["1", "2", "3", "4"]
    options = expand(spec, "choice")  # the same sets: every member's count, in set order
    assert options[0]["options"] == [e["answers"][0] for e in examples]
    assert options[0]["options"] == ["2", "1", "4", "3"] and options[0]["answer"] == 0
    assert [e["answer"] for e in options] == [0, 1, 2, 3]  # mirrored: each count once right
    assert all(e["options"] == options[0]["options"] for e in options)


def test_a_single_object_question_uses_the_plural_and_the_count_word_agrees():
    """A question does not know the count: {a.shapes} is plural even for one; {count} is the
    word and {number} the digits."""
    spec = {
        "n": 4,
        "seed": 2,
        "question": "How many {a.shapes} are there?",
        "answer": ["{number}", "{count}"],
        "negatives": [{"replace": "count", "k": 3}],
    }
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    for example in expand(spec, "answer"):
        objects = example["image"]["scene"]["objects"]
        (shape,) = {o["shape"] for o in objects}
        assert example["question"] == f"How many {SHAPE_PLURALS[shape]} are there?"
        assert example["answers"] == [str(len(objects)), words[len(objects)]]


def test_negated_questions_are_answered_no_on_their_own_scene():
    spec = {
        "n": 4,
        "seed": 5,
        "question": "Is the {a.shape} not {a.color}?",
        "answer": "No",
        "negatives": ["replace a.color"],
    }
    examples = expand(spec, "match")
    assert [e["label"] for e in examples] == ["no_match", "match"] * 2
    own, other = examples[0], examples[1]
    (obj,) = own["image"]["scene"]["objects"]
    assert own["question"] == f"Is the {obj['shape']} not {obj['color']}?"
    assert other["image"] == own["image"] and other["question"] != own["question"]
    assert own["caption"] == own["question"] and other["neg_type"] == "color"


# --------------------------------------------------------------------------- the suite


@pytest.mark.parametrize(("name", "test"), SUITE_TESTS, ids=[n for n, _ in SUITE_TESTS])
def test_every_generated_answer_is_true_of_its_scene(name: str, test: dict):
    examples = expand(test["generate"], test["task"])
    assert len(examples) == test["generate"]["n"]
    for e in examples:
        truth, accepted = right_answers(e)
        assert accepted == [truth], (e["id"], e["question"], accepted, truth)
        if "options" in e:  # no other option is also right
            assert e["options"].count(truth) == 1


@pytest.mark.parametrize(("name", "test"), SUITE_TESTS, ids=[n for n, _ in SUITE_TESTS])
def test_a_blind_model_scores_chance(name: str, test: dict):
    """Mirrored sets: a constant answer (a letter, a word, yes) is right exactly 1/k."""
    examples = expand(test["generate"], test["task"])
    if test["task"] == "choice":
        positions = Counter(e["answer"] for e in examples)
        assert len(set(positions.values())) == 1 and len(positions) == len(examples[0]["options"])
    elif test["task"] == "answer":
        k = 1 + test["generate"]["negatives"][0]["k"]
        for start in range(0, len(examples), k):  # a set: k scenes, k different answers
            assert len({e["answers"][0] for e in examples[start : start + k]}) == k
    else:
        labels = Counter(e["label"] for e in examples)
        assert labels["match"] == labels["no_match"]


def test_the_suite_asks_exactly_the_agreed_questions():
    assert {t["generate"]["question"] for _, t in SUITE_TESTS} == PHRASING
    assert {t["task"] for _, t in SUITE_TESTS} == {"choice", "answer", "match"}
    assert {t["capability"] for _, t in SUITE_TESTS} == {
        "counting/number",
        "attribute/color",
        "object/existence",
        "object/negation",
        "relation/spatial",
    }


def digest() -> str:
    """SHA-256 of every generative test's expansion, in file and test order."""
    h = hashlib.sha256()
    for name, test in suite_tests():
        h.update(name.encode())
        h.update(json.dumps(expand(test["generate"], test["task"]), sort_keys=True).encode())
    return h.hexdigest()


def test_same_seed_same_questions_in_another_process():
    """Equal in this process and in another one with another hash seed; another seed differs."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); from {} import digest; print(digest())"
    done = subprocess.run(
        [sys.executable, "-c", code.format(Path(__file__).stem), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="12345"),
        check=True,
        cwd=REPO,
    )
    assert done.stdout.strip() == digest()
    _, test = SUITE_TESTS[0]
    spec = test["generate"]
    assert expand(spec, test["task"]) != expand(dict(spec, seed=spec["seed"] + 1), test["task"])


def test_the_suite_is_packaged_and_named_like_the_bundled_one():
    assert bundled_checklists_dir(GENERATIVE) == SUITE
    assert [p.name for p in bundled_checklists(GENERATIVE)] == [
        "attribute.yaml",
        "counting.yaml",
        "object.yaml",
        "relation.yaml",
    ]
    path = SUITE / "object.yaml"
    assert report_name(path) == "bundled:checklists_generative/object.yaml"
    assert from_report_name("bundled:checklists_generative/object.yaml", REPO) == path
    assert from_report_name("bundled:object.yaml", REPO) == bundled_checklists_dir() / "object.yaml"
    assert from_report_name("bundled:elsewhere/object.yaml", REPO).name == "object.yaml"
    for file in bundled_checklists(GENERATIVE):
        assert load_checklist(file).tests


# --------------------------------------------------------------------------- mistakes

CHECKLIST = """\
vlcheck: 1
tests:
  - id: t
    capability: a/b
    task: {task}
    threshold: 0.5
    generate:
      n: 4
{keys}
"""


@pytest.mark.parametrize(
    ("task", "keys", "message"),
    [
        (
            "caption",
            "      question: 'What color is the {a.shape}?'\n      answer: '{a.color}'\n"
            "      negatives: [replace a.color]",
            "question: only match, choice, answer tests ask questions; this test is caption",
        ),
        (
            "answer",
            "      caption: 'a {a.color} {a.shape}'\n      negatives: [replace a.color]",
            "question: missing; answer tests ask a question, e.g. 'How many {a.shapes}...'",
        ),
        (
            "match",
            "      question: 'Is the {a.shape} not {a.color}?'\n      answer: No\n"
            "      negatives: [replace a.color]",
            "answer: expected a template string such as '{a.color}', or for match \"Yes\" or "
            '"No" in quotes (YAML reads a bare yes or no as true or false), got False',
        ),
        (
            "match",
            "      question: 'Is the {a.shape} red?'\n      answer: Maybe\n"
            "      negatives: [replace a.color]",
            'answer: expected "Yes" (the default) or "No": the answer to the question '
            "filled from the scene's own truth, got ['Maybe']",
        ),
        (
            "match",
            "      question: 'Is there a {a.shape} in the image?'\n"
            "      negatives: [replace a.color]",
            "question: 'replace a.color' changes nothing the question names, so two candidates "
            "would share it; expected a question that names what the negatives change",
        ),
        (
            "choice",
            "      question: 'What color is the {a.shape}?'\n      answer: ['{a.color}', x]\n"
            "      negatives: [replace a.color]",
            "answer: expected one template: each candidate's fill is one option",
        ),
        (
            "choice",
            "      question: 'What color is the {a.shape}?'\n      answer: '{a.shape}'\n"
            "      negatives: [replace a.color]",
            "answer: 'replace a.color' changes nothing the answer names",
        ),
        (
            "answer",
            "      question: 'What color is the {a.shape}?'\n      negatives: [replace a.color]",
            "answer: missing; e.g. '{a.color}' (the template every candidate fills)",
        ),
        (
            "choice",
            "      caption: 'a {a.color} {a.shape}'\n      answer: '{a.color}'\n"
            "      negatives: [replace a.color]",
            "answer: needs a question template to answer",
        ),
        (
            "answer",
            "      question: 'What is the {a.hue}?'\n      answer: '{a.color}'\n"
            "      negatives: [replace a.color]",
            "question: unknown variable {a.hue}",
        ),
    ],
)
def test_a_mistake_is_one_file_line(tmp_path: Path, task: str, keys: str, message: str):
    path = tmp_path / "c.yaml"
    path.write_text(CHECKLIST.format(task=task, keys=keys), encoding="utf-8")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}:7: generate: {message}"), text
