"""``vlcheck import sugarcrepe-pp``: the real files' sizes and degenerate records, ITT and TOT
worked out by hand on a fixture (ITT from a ``scores:`` file, TOT with a ``py:`` scorer's text
embeddings), and bad records reported at their source line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_importers import examples_of, fails, imported
from test_importers_e2e import import_into, run_scored, scores_for

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers" / "sugarcrepe_pp"
ANCHORS = Path(__file__).resolve().parents[2] / ".." / "shared" / "anchors" / "sugarcrepe-pp"

SIZES = {"replace_obj": 1652, "replace_att": 788, "replace_rel": 1406, "swap_obj": 245,
         "swap_att": 666}  # fmt: skip


@pytest.mark.skipif(not ANCHORS.is_dir(), reason="../shared/anchors is not beside the checkout")
def test_the_published_sets_import_whole(tmp_path: Path, capsys) -> None:
    doc = imported(tmp_path, "sugarcrepe-pp", ANCHORS)
    counts = {t["id"]: len(t["examples"]) for t in doc["tests"]}
    assert counts == {
        f"{name}_{kind}": size for name, size in SIZES.items() for kind in ("itt", "tot")
    }
    err = capsys.readouterr().err
    # the three degenerate records stay in the denominators and are listed
    assert "replace_att.json: 1 degenerate record(s)" in err
    assert "id 14 (caption equals caption2" in err
    assert "swap_obj.json: 2 degenerate record(s)" in err
    assert "id 2 (a caption equals the negative" in err and "id 8 (a caption equals" in err


def test_two_tests_per_set_in_the_papers_order(tmp_path: Path) -> None:
    doc = imported(tmp_path, "sugarcrepe-pp", FIXTURES)
    tests = {t["id"]: t for t in doc["tests"]}
    assert list(tests) == ["replace_att_itt", "replace_att_tot", "swap_obj_itt", "swap_obj_tot"]
    assert tests["swap_obj_itt"]["task"] == "caption"
    assert tests["swap_obj_tot"]["task"] == "text" and tests["swap_obj_tot"]["symmetric"] is True
    assert tests["swap_obj_tot"]["capability"] == "object/swap"
    # chance: 1 / C(3, 2) for two true captions of three; 1 / (2k + 1) for symmetric TOT
    assert tests["swap_obj_itt"]["threshold"] == tests["swap_obj_tot"]["threshold"] == 0.3333
    assert examples_of(doc, "swap_obj_itt")["0"] == {
        "id": "0",
        "image": "000000000001.jpg",
        "captions": ["a cat chases a dog", "a dog is chased by a cat"],
        "negatives": ["a dog chases a cat"],
    }
    assert examples_of(doc, "swap_obj_tot")["0"] == {
        "id": "0",
        "anchor": "a cat chases a dog",
        "positive": "a dog is chased by a cat",
        "negatives": ["a dog chases a cat"],
    }


# s(image, text) per example, by text: ITT needs both captions strictly above the negative.
ITT_SCORES = {
    ("swap_obj_itt", "0"): {"a cat chases a dog": 0.5, "a dog is chased by a cat": 0.4,
                            "a dog chases a cat": 0.3},  # right
    ("swap_obj_itt", "1"): {"a man holds a child": 0.6, "a child is held by a man": 0.7},
    # ^ the negative is the caption itself: a tie, wrong
    ("swap_obj_itt", "2"): {"a bird on a horse": 0.5, "a horse on a bird": 0.45},  # right
    ("replace_att_itt", "0"): {"a red car": 0.3, "a car that is red": 0.2,
                               "a blue car": 0.25},  # caption2 below the negative: wrong
    ("replace_att_itt", "1"): {"a tall tree": 0.4, "a tree that is tall": 0.35,
                               "a short tree": 0.1},  # right
}  # fmt: skip


def test_itt_by_hand(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "sugarcrepe-pp", str(FIXTURES))

    def rule(test: str, example: str, i: int, j: int) -> float:
        record = next(r for r in _records(test) if str(r["id"]) == example)
        column = (record["caption"], record["caption2"], record["negative_caption"])[j]
        return ITT_SCORES[(test, example)][column]

    scores = scores_for(checklist, rule, pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores, "-k", "itt")
    assert (rows["swap_obj_itt"]["n"], rows["swap_obj_itt"]["passed"]) == (3, 2)
    assert rows["swap_obj_itt"]["ties"] == 1
    assert (rows["replace_att_itt"]["n"], rows["replace_att_itt"]["passed"]) == (2, 1)
    result.assert_outcomes(passed=2)  # 2/3 and 1/2 >= chance 1/3


def _records(test: str) -> list[dict]:
    name = test.rsplit("_", 1)[0]
    return json.loads((FIXTURES / f"{name}.json").read_text())


# Text embeddings with cosines worked out by hand (anchor . positive first).
TOT_SCORER = """
import numpy as np

VECTORS = {
    # swap_obj 0: s(A, P) = 0.8 > s(A, N) = 0.6, but s(P, N) = 0.96: wrong
    "a cat chases a dog": (1.0, 0.0, 0.0),
    "a dog is chased by a cat": (0.8, 0.6, 0.0),
    "a dog chases a cat": (0.6, 0.8, 0.0),
    # swap_obj 1: the negative is the anchor, s(A, N) = 1: wrong
    "a man holds a child": (0.0, 1.0, 0.0),
    "a child is held by a man": (0.0, 0.6, 0.8),
    # swap_obj 2: anchor == positive, s = 1 > s(A, N) = s(P, N) = 0.8: right
    "a bird on a horse": (0.0, 0.0, 1.0),
    "a horse on a bird": (0.6, 0.0, 0.8),
    # replace_att 0: 0.8 > 0.6 and 0.8 > 0.48 - 0.48 = 0: right
    "a red car": (1.0, 0.0, 0.0),
    "a car that is red": (0.8, 0.0, 0.6),
    "a blue car": (0.6, 0.0, -0.8),
    # replace_att 1: s(A, P) = s(A, N) = 0.8 exactly: a tie, wrong
    "a tall tree": (0.0, 1.0, 0.0),
    "a tree that is tall": (0.0, 0.8, 0.6),
    "a short tree": (0.0, 0.8, -0.6),
}


class Texts:
    fingerprint = "tot-v1"

    def encode_images(self, images):
        raise AssertionError("TOT loads no image")

    def encode_texts(self, texts):
        return np.asarray([VECTORS[t] for t in texts], dtype=np.float32)


def make():
    return Texts()
"""


def test_tot_by_hand_with_a_py_scorer(pytester: pytest.Pytester) -> None:
    checklist = import_into(pytester.path, "sugarcrepe-pp", str(FIXTURES))
    pytester.makepyfile(tot_scorer=TOT_SCORER)
    report = pytester.path / "report"
    result = pytester.runpytest(
        str(checklist),
        "--vl-model=py:tot_scorer:make",
        f"--vl-report={report}",
        "-k",
        "tot",
        "-p",
        "no:cacheprovider",
    )
    rows = {r["test"]: r for r in json.loads((report / "matrix.json").read_text())["results"]}
    assert (rows["swap_obj_tot"]["n"], rows["swap_obj_tot"]["passed"]) == (3, 1)
    assert (rows["replace_att_tot"]["passed"], rows["replace_att_tot"]["ties"]) == (1, 1)
    result.assert_outcomes(passed=2)  # 1/2 and 1/3 >= the chance threshold 0.3333


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ('{"id": 0, "filename": "a.jpg", "caption": "x", "negative_caption": "y"}',
         "swap_obj.json:3: missing field 'caption2'"),
        ('{"id": null, "filename": "a.jpg", "caption": "x", "caption2": "z", '
         '"negative_caption": "y"}', "swap_obj.json:3: 'id' is None; expected a number or a text"),
        ('[1, 2]', "swap_obj.json:3: expected an object with id, filename"),
    ],
)  # fmt: skip
def test_a_bad_record_is_reported_at_its_source_line(
    tmp_path: Path, capsys, record: str, message: str
) -> None:
    source = tmp_path / "src" / "swap_obj.json"
    source.parent.mkdir()
    good = (
        '{"id": 9, "filename": "b.jpg", "caption": "p", "caption2": "q", "negative_caption": "r"}'
    )
    source.write_text(f"[\n  {good},\n  {record}\n]\n")
    assert message in fails(capsys, tmp_path, "sugarcrepe-pp", source)


def test_an_unknown_set_and_a_repeated_id_are_refused(tmp_path: Path, capsys) -> None:
    odd = tmp_path / "add_att.json"
    odd.write_text("[]")
    assert "'add_att' is not a SugarCrepe++ set" in fails(capsys, tmp_path, "sugarcrepe-pp", odd)
    twice = tmp_path / "swap_att.json"
    record = (
        '{"id": 1, "filename": "a.jpg", "caption": "p", "caption2": "q", "negative_caption": "r"}'
    )
    twice.write_text(f"[{record},\n{record}]")
    assert "swap_att.json:2: id 1 repeats" in fails(capsys, tmp_path, "sugarcrepe-pp", twice)
