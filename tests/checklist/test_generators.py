"""Generators: counts, seeded determinism (in and across processes), balance, correctness.

The correctness checks read each generated caption back with a small independent parser
and check it against the scene spec: the true caption must hold in its scene and every
negative must not (no negative that is accidentally true, no truth that is false).
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

from pytest_vlcheck.checklist import ChecklistError
from pytest_vlcheck.checklist.bundled import bundled_checklists, bundled_checklists_dir
from pytest_vlcheck.checklist.generators import expand
from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.images.scenes import (
    SHAPE_PLURALS,
    SHAPES,
    location_bin,
    object_box,
    size_bin,
    validate_scene,
)

REPO = Path(__file__).resolve().parents[2]
COLOR_SPEC = {
    "n": 10,
    "seed": 3,
    "caption": "a {a.color} {a.shape}",
    "negatives": ["replace a.color"],
}


def bundled_specs() -> list[tuple[str, dict]]:
    out = []
    for path in bundled_checklists():
        for test in yaml.safe_load(path.read_text())["tests"]:
            out.append((f"{path.name}::{test['id']}", test))
    return out


def digest_bundled() -> str:
    """SHA-256 of every bundled test's expansion, in file and test order."""
    h = hashlib.sha256()
    for name, test in bundled_specs():
        h.update(name.encode())
        h.update(json.dumps(expand(test["generate"], test["task"]), sort_keys=True).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- determinism


def test_expansion_counts_and_ids():
    examples = expand(COLOR_SPEC, "caption")
    assert len(examples) == 10
    assert len({e["id"] for e in examples}) == 10
    assert [e["id"] for e in examples[:4]] == ["0000.0", "0000.1", "0001.0", "0001.1"]
    assert len(expand(dict(COLOR_SPEC, n=7), "caption")) == 7
    # More examples extend the list: the first ones do not change.
    assert expand(dict(COLOR_SPEC, n=20), "caption")[:10] == examples


def test_seeded_determinism_in_process():
    assert expand(COLOR_SPEC, "caption") == expand(COLOR_SPEC, "caption")
    assert expand(COLOR_SPEC, "caption") != expand(dict(COLOR_SPEC, seed=4), "caption")


def test_bundled_checklists_expand_identically_twice_and_across_processes():
    first = digest_bundled()
    assert digest_bundled() == first
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "sys.path.insert(0, sys.argv[2]); "
        "from test_generators import digest_bundled; print(digest_bundled())"
    )
    for hash_seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run(
            [sys.executable, "-c", code, str(REPO), str(Path(__file__).parent)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=str(REPO),
        )
        assert out.stdout.strip() == first


# --------------------------------------------------------------------------- shapes of output


def test_example_shapes_per_task():
    cap = expand(COLOR_SPEC, "caption")[0]
    assert set(cap) == {"id", "image", "caption", "negatives", "tags"}
    validate_scene(cap["image"]["scene"])
    img = expand(
        dict(
            COLOR_SPEC,
            negatives=[{"replace": "a.color", "k": 2}],
            prompts=["a {a.color} {a.shape}", "a photo of a {a.color} {a.shape}"],
        ),
        "image",
    )[0]
    assert set(img) == {"id", "text", "image", "distractors", "tags"}
    assert isinstance(img["text"], list) and len(img["text"]) == 2
    assert len(img["distractors"]) == 2
    grp = expand(
        dict(
            COLOR_SPEC,
            caption="a {a.color} {a.shape} and a {b.color} {b.shape}",
            negatives=["swap color"],
        ),
        "group",
    )[0]
    assert set(grp) == {"id", "images", "captions", "tags"}
    match = expand(dict(COLOR_SPEC, n=4), "match")
    assert [m["label"] for m in match] == ["match", "no_match", "match", "no_match"]
    assert match[1]["neg_type"] == "color" and "neg_type" not in match[0]
    # The no_match caption of one scene is the match caption of its mirror scene.
    assert match[1]["caption"] == match[2]["caption"]
    assert match[1]["image"] == match[0]["image"] and match[2]["image"] == match[3]["image"]


def test_unslotted_variables_mean_object_a():
    short = dict(COLOR_SPEC, caption="a {color} {shape}")
    assert expand(short, "caption") == expand(COLOR_SPEC, "caption")


def test_articles_agree():
    caps = [e["caption"] for e in expand(dict(COLOR_SPEC, n=200), "caption")]
    assert any(c.startswith("an orange") for c in caps)
    assert not any(c.startswith("a orange") or c.startswith("an red") for c in caps)


def test_stratify_places_object_in_the_requested_bins():
    spec = {
        "n": 36,
        "caption": "a {a.shape}",
        "negatives": ["replace a.shape"],
        "stratify": {"location": ["center", "mid", "margin"], "size": ["small", "medium", "large"]},
    }
    examples = expand(spec, "caption")
    seen = Counter()
    for e in examples:
        scene = e["image"]["scene"]
        box = object_box(scene["objects"][0], (224, 224))
        assert e["tags"]["location"] == location_bin(box, (224, 224))
        assert e["tags"]["size"] == size_bin(box, (224, 224))
        seen[(e["tags"]["location"], e["tags"]["size"])] += 1
    assert len(seen) == 9 and set(seen.values()) == {4}


@pytest.mark.parametrize(
    ("spec", "task", "message"),
    [
        ({"caption": "a {a.shape}", "negatives": ["replace a.shape"]}, "caption", "n: expected"),
        (dict(COLOR_SPEC, colour=1), "caption", "colour: unknown key; expected one of n, seed"),
        (dict(COLOR_SPEC, caption="a {a.colour}"), "caption", "caption: unknown variable"),
        (dict(COLOR_SPEC, caption="a {x}"), "caption", "caption: unknown variable {x}"),
        (dict(COLOR_SPEC, caption="a {a.shape"), "caption", "caption: malformed braces"),
        (
            dict(COLOR_SPEC, negatives=["recolour a.color"]),
            "caption",
            "negatives[0]: unknown operation 'recolour'",
        ),
        (
            dict(COLOR_SPEC, negatives=["replace a.hue"]),
            "caption",
            "negatives[0]: cannot replace 'a.hue'",
        ),
        (
            dict(COLOR_SPEC, negatives=["shuffle words"]),
            "caption",
            "negatives[0]: unknown shuffle 'words'",
        ),
        (
            dict(COLOR_SPEC, negatives=[{"replace": "a.color", "k": 0}]),
            "caption",
            "negatives[0].k: expected an integer 1-8",
        ),
        (
            dict(COLOR_SPEC, negatives=["swap color"]),
            "caption",
            "negatives: 'swap color' needs a caption that describes two objects",
        ),
        (
            dict(COLOR_SPEC, lexicon={"color": ["red", "teal"]}),
            "caption",
            "lexicon.color: unknown value 'teal'",
        ),
        (dict(COLOR_SPEC, lexicon={"hue": ["red"]}), "caption", "lexicon.hue: unknown variable"),
        (
            dict(COLOR_SPEC, lexicon={"color": ["red"]}),
            "caption",
            "lexicon.color: needs at least 2 values",
        ),
        (
            dict(COLOR_SPEC, negatives=["shuffle trigrams"]),
            "image",
            "negatives: image tests need scene negatives",
        ),
        (
            dict(COLOR_SPEC, negatives=[{"replace": "a.color", "k": 2}]),
            "group",
            "negatives: group tests need exactly one scene negative",
        ),
        (dict(COLOR_SPEC, prompts=["a {a.shape}"]), "caption", "prompts: only image tests"),
        (
            dict(COLOR_SPEC, caption="a {a.shape} and a {b.shape}", negatives=["swap objects"]),
            "caption",
            "negatives: 'swap objects' needs {relation}",
        ),
        (dict(COLOR_SPEC, stratify={"place": ["center"]}), "caption", "stratify.place"),
        (dict(COLOR_SPEC, extras=[3, 1]), "caption", "extras: expected"),
        (
            dict(COLOR_SPEC, caption="a {a.shape} {relation}", negatives=["replace relation"]),
            "caption",
            "caption: {relation} needs exactly two objects",
        ),
        (
            dict(COLOR_SPEC, caption="{count} {a.shapes} and a {b.shape}"),
            "caption",
            "caption: {count} needs exactly one described object",
        ),
        ([1], "caption", "expected a mapping"),
    ],
)
def test_bad_generate_specs_name_the_key(spec, task, message):
    with pytest.raises(ValueError) as info:
        expand(spec, task)
    assert str(info.value).startswith(message.split(":")[0]) or message in str(info.value)
    assert message in str(info.value)


def test_impossible_constraints_fail_cleanly():
    spec = dict(
        COLOR_SPEC,
        negatives=[{"replace": "a.color", "k": 3}],
        lexicon={"color": ["red", "blue", "green"]},
    )
    with pytest.raises(ValueError, match="negatives: could not build candidate set 0"):
        expand(spec, "caption")


# --------------------------------------------------------------------------- a caption oracle

STATES = {"hollow": True, "filled": False}
TEXTURES = {"striped", "dotted", "checkered"}
SIZES = {"small", "big"}
COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
RELATIONS = {
    "to the left of": "left",
    "to the right of": "right",
    "above": "above",
    "below": "below",
    "inside": "inside",
}
PLURAL_TO_SHAPE = {v: k for k, v in SHAPE_PLURALS.items()}


def parse(caption: str) -> dict | None:
    """Noun phrases, relation and count of a generated caption; None when it does not parse."""
    text = caption
    for rel in RELATIONS:
        text = text.replace(rel, rel.replace(" ", "_"))
    words = text.split()
    phrases: list[dict] = []
    pending: dict = {}
    relation = count = None
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("a", "an", "and", "photo", "of", "there", "is", "in", "the", "picture"):
            pass
        elif w == "that" and words[i + 1 : i + 2] == ["is"] and phrases:
            phrases[-1]["texture"] = words[i + 2]
            i += 2
        elif w.replace("_", " ") in RELATIONS:
            relation = RELATIONS[w.replace("_", " ")]
        elif w in COUNTS:
            count = COUNTS[w]
        elif w in SHAPES or w in PLURAL_TO_SHAPE:
            phrases.append(dict(pending, shape=PLURAL_TO_SHAPE.get(w, w)))
            pending = {}
        elif w in STATES:
            pending["hollow"] = STATES[w]
        elif w in TEXTURES:
            pending["texture"] = w
        elif w in SIZES:
            pending["size"] = w
        elif w.isalpha() and w not in ("to", "left", "right"):
            pending["color"] = w
        else:
            return None
        i += 1
    if pending or not phrases:
        return None
    return {"phrases": phrases, "relation": relation, "count": count}


def matches(obj: dict, phrase: dict) -> bool:
    return (
        obj["shape"] == phrase["shape"]
        and obj["color"] == phrase.get("color", obj["color"])
        and obj.get("texture", "solid") == phrase.get("texture", obj.get("texture", "solid"))
        and obj.get("hollow", False) == phrase.get("hollow", obj.get("hollow", False))
    )


def holds(caption: str, scene: dict) -> bool | None:
    """Whether the caption is true of the scene (None: the caption does not parse)."""
    parsed = parse(caption)
    if parsed is None:
        return None
    objs = scene["objects"]
    found = []
    for phrase in parsed["phrases"]:
        hits = [o for o in objs if matches(o, phrase)]
        if parsed["count"] is not None:
            return len(hits) == parsed["count"]
        if len(hits) != 1:
            return False
        found.append(hits[0])
    sized = [(p.get("size"), o) for p, o in zip(parsed["phrases"], found, strict=True)]
    if all(s for s, _ in sized) and len(sized) == 2:
        (sa, a), (sb, b) = sized
        if sa == sb or (a["size"] > b["size"]) != (sa == "big"):
            return False
    if parsed["relation"] is None:
        return True
    a, b = found

    def span(o, axis):
        c, h = o["position"][axis], o["size"] / 2  # fractions; square canvases only
        return c - h, c + h

    (al, ar), (bl, br) = span(a, 0), span(b, 0)
    (at, ab), (bt, bb) = span(a, 1), span(b, 1)
    rel = parsed["relation"]
    if rel == "inside":
        return bl <= al and ar <= br and bt <= at and ab <= bb
    if rel == "left":
        return ar < bl and not (ab < bt or bb < at)
    if rel == "right":
        return br < al and not (ab < bt or bb < at)
    if rel == "above":
        return ab < bt and not (ar < bl or br < al)
    return bb < at and not (ar < bl or br < al)


def test_oracle_on_hand_made_scenes():
    scene = {
        "objects": [
            {"shape": "circle", "color": "red", "size": 0.2, "position": [0.2, 0.5]},
            {
                "shape": "star",
                "color": "blue",
                "size": 0.3,
                "position": [0.7, 0.5],
                "texture": "striped",
            },
        ]
    }
    assert holds("a red circle to the left of a blue star", scene) is True
    assert holds("a blue star to the left of a red circle", scene) is False
    assert holds("a red circle above a blue star", scene) is False
    assert holds("a small red circle and a big star", scene) is True
    assert holds("a big circle and a small star", scene) is False
    assert holds("a striped blue star", scene) is True
    assert holds("a blue star that is dotted", scene) is False
    assert holds("two red circles", scene) is False
    assert holds("one red circle", scene) is True
    assert holds("circle red a", scene) is None


@pytest.mark.parametrize(("name", "test"), bundled_specs(), ids=[n for n, _ in bundled_specs()])
def test_bundled_truths_hold_and_negatives_do_not(name, test):
    examples = expand(test["generate"], test["task"])
    assert len(examples) >= 200
    parsed_negatives = 0
    # ARO shuffles are ungrammatical; the lenient parser may read some as true, so for
    # them only "differs from the truth" is checked (as ARO defines its negatives).
    shuffled = "shuffle" in json.dumps(test["generate"])
    for e in examples:
        if test["task"] in ("caption", "invariance"):
            scene = e["image"]["scene"]
            assert holds(e["caption"], scene) is True, (e["id"], e["caption"])
            assert e["caption"] not in e["negatives"]
            assert len(set(e["negatives"])) == len(e["negatives"])
            for neg in [] if shuffled else e["negatives"]:
                verdict = holds(neg, scene)
                assert verdict is not True, (e["id"], neg)
                parsed_negatives += verdict is False
        elif test["task"] == "image":
            for text in e["text"] if isinstance(e["text"], list) else [e["text"]]:
                assert holds(text, e["image"]["scene"]) is True
                assert all(holds(text, d["scene"]) is False for d in e["distractors"])
        elif test["task"] == "directional":
            assert holds(e["text"], e["image"]["scene"]) is True
            if "changed_image" in e:  # the named object left out: the text no longer holds
                changed = e["changed_image"]["scene"]
                shown = [o for o in changed["objects"] if not o.get("hidden")]
                assert holds(e["text"], dict(changed, objects=shown)) is False
        elif test["task"] == "group":
            (i0, i1), (c0, c1) = e["images"], e["captions"]
            assert holds(c0, i0["scene"]) and holds(c1, i1["scene"])
            assert holds(c0, i1["scene"]) is False and holds(c1, i0["scene"]) is False
        else:
            assert holds(e["caption"], e["image"]["scene"]) is (e["label"] == "match")
    if test["task"] == "caption" and not shuffled:
        assert parsed_negatives == sum(len(e["negatives"]) for e in examples)


MIRRORED = [
    (n, t)
    for n, t in bundled_specs()
    if t["task"] not in ("group", "directional") and "shuffle" not in json.dumps(t["generate"])
]


@pytest.mark.parametrize(("name", "test"), MIRRORED, ids=[n for n, _ in MIRRORED])
def test_bundled_sets_are_balanced(name, test):
    """Each candidate is the truth once per role it plays as a negative: blind scorers get
    chance. (Group tests are symmetric by construction; ARO shuffles cannot be mirrored.)"""
    examples = expand(test["generate"], test["task"])
    if test["task"] in ("caption", "invariance"):
        truths = Counter(e["caption"] for e in examples)
        negatives = Counter(n for e in examples for n in e["negatives"])
        k = len(examples[0]["negatives"])
    elif test["task"] == "image":
        truths = Counter(json.dumps(e["image"], sort_keys=True) for e in examples)
        negatives = Counter(
            json.dumps(d, sort_keys=True) for e in examples for d in e["distractors"]
        )
        k = len(examples[0]["distractors"])
    else:
        truths = Counter(e["caption"] for e in examples if e["label"] == "match")
        negatives = Counter(e["caption"] for e in examples if e["label"] == "no_match")
        k = 1
    assert set(truths) == set(negatives)
    assert all(negatives[c] == k * truths[c] for c in truths)


def test_bundled_files_load_and_live_in_the_package_dir():
    assert bundled_checklists_dir() == REPO / "checklists"
    names = [p.name for p in bundled_checklists()]
    assert names == sorted(names) and "object.yaml" in names
    capabilities = set()
    kinds = set()
    for path in bundled_checklists():
        for test in load_checklist(path).tests:
            assert len(test.examples) >= 200, (path.name, test.id)
            capabilities.add(test.capability)
            kinds.add(test.task)
    assert kinds == {"caption", "image", "group", "match", "invariance", "directional"}
    assert {
        "object/existence",
        "object/location",
        "object/size",
        "attribute/color",
        "attribute/size",
        "attribute/texture",
        "attribute/state",
        "relation/spatial",
        "counting/number",
        "order/word_order",
        "order/binding",
    } <= capabilities


# --------------------------------------------------------------------------- review fixes


def test_swap_attribute_with_three_described_objects_swaps_a_and_b_only():
    """``swap ATTR`` is between a and b; a third described object stays (it once crashed with
    "too many values to unpack")."""
    caption = "a {a.color} {a.shape}, a {b.color} {b.shape} and a {c.color} {c.shape}"
    examples = expand(dict(COLOR_SPEC, n=6, caption=caption, negatives=["swap color"]), "caption")
    assert len(examples) == 6
    for e in examples:
        a, b, c = ((o["color"], o["shape"]) for o in e["image"]["scene"]["objects"])
        truth = f"a {a[0]} {a[1]}, a {b[0]} {b[1]} and a {c[0]} {c[1]}"
        swapped = f"a {b[0]} {a[1]}, a {a[0]} {b[1]} and a {c[0]} {c[1]}"
        written = [re.sub(r"\ban\b", "a", t) for t in (e["caption"], *e["negatives"])]
        assert written == [truth, swapped]


@pytest.mark.parametrize("written", ["[]", ""])
def test_a_lexicon_entry_without_values_says_so(tmp_path: Path, written: str):
    path = tmp_path / "c.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n  - id: t\n    capability: attribute/color\n    task: caption\n"
        "    threshold: 0.5\n    generate:\n      n: 4\n      caption: 'a {a.color} {a.shape}'\n"
        f"      lexicon: {{color: {written}}}\n      negatives: [replace a.color]\n"
    )
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert str(info.value) == (
        f"{path}:7: generate: lexicon.color: no values; expected a list of values to draw from "
        "(red, orange, yellow, green, blue, purple, pink, brown, black, white, gray, "
        "lightgray, beige), or leave color out for the default"
    )
