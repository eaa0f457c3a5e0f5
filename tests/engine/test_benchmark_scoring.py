"""Each benchmark scored the way its authors score it: SVO-Probes, ARO, VL-CheckList (issue 12).

The expected numbers are computed by hand from the authors' definitions, in the comments.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.checklist.schema import MacroSpec
from pytest_vlcheck.cli.import_command import add_import_command
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.importers.aro import SYMMETRIC_RELATIONS
from pytest_vlcheck.metrics.aggregates import AllOfRate, MacroAverage, all_of_rate, macro_average
from pytest_vlcheck.metrics.choice import match_accuracies
from pytest_vlcheck.models.backends.scores import PrecomputedScores, ScoresFileError
from pytest_vlcheck.models.protocol import RefPair

# ---------------------------------------------------------------- match accuracies


def test_match_accuracies_count_an_example_in_every_type_it_carries() -> None:
    # p1 (right) is a positive paired with subject and verb negatives; p2 (wrong) with object.
    # n1 subject (right), n2 verb (wrong), n3 object (right), n4 object (wrong).
    correct = np.array([True, False, True, False, True, False])
    labels = np.array([True, True, False, False, False, False])
    types = [("subject", "verb"), ("object",), ("subject",), ("verb",), ("object",), ("object",)]
    out = match_accuracies(correct, labels, types)
    assert out["positive_accuracy"] == 1 / 2  # p1 of p1, p2
    assert out["negative_accuracy"] == 2 / 4  # n1, n3 of four
    assert out["average_accuracy"] == 1 / 2
    # subject: p1 right; n1 right -> 1, 1, 1
    assert out["neg_type=subject/positive_accuracy"] == 1.0
    assert out["neg_type=subject/average_accuracy"] == 1.0
    # verb: p1 right; n2 wrong -> 1, 0, 0.5
    assert out["neg_type=verb/positive_accuracy"] == 1.0
    assert out["neg_type=verb/negative_accuracy"] == 0.0
    assert out["neg_type=verb/average_accuracy"] == 0.5
    # object: p2 wrong; n3 right, n4 wrong -> 0, 0.5, 0.25
    assert out["neg_type=object/positive_accuracy"] == 0.0
    assert out["neg_type=object/negative_accuracy"] == 0.5
    assert out["neg_type=object/average_accuracy"] == 0.25
    assert len(out) == 12


def test_match_accuracies_untyped_examples_count_overall_only() -> None:
    out = match_accuracies(np.array([True, False]), np.array([True, False]), [(), ("verb",)])
    assert out == {
        "positive_accuracy": 1.0,
        "negative_accuracy": 0.0,
        "average_accuracy": 0.5,
        "neg_type=verb/negative_accuracy": 0.0,
    }
    with pytest.raises(ValueError, match="1 type tuples for 2 examples"):
        match_accuracies(np.array([True, False]), np.array([True, False]), [()])


# ---------------------------------------------------------------- macro average


def test_macro_average_weighs_every_value_the_same() -> None:
    # on: 3 of 4 right; under: 1 of 2; near: 0 of 1 (too few); behind: excluded; None: untagged
    values = ["on", "on", "on", "on", "under", "under", "near", "behind", None]
    correct = np.array([True, True, True, False, True, False, False, True, True])
    out = macro_average(correct, values, min_count=2, exclude=("behind",))
    assert out == MacroAverage(
        (3 / 4 + 1 / 2) / 2,
        {"on": (4, 3), "under": (2, 1)},
        {"behind": "excluded", "near": "n=1 < 2"},
    )
    # micro over the same qualifying examples would be 4/6: the macro mean is not that
    assert out.value == 0.625


def test_macro_average_defaults_and_nothing_qualifying() -> None:
    out = macro_average(np.array([True, False, False]), ["a", "b", "b"])
    assert out.value == (1.0 + 0.0) / 2 and out.left_out == {}
    empty = macro_average(np.array([True]), ["a"], min_count=25)
    assert empty == MacroAverage(None, {}, {"a": "n=1 < 25"})
    with pytest.raises(ValueError, match="2 tag values for 1 outcomes"):
        macro_average(np.array([True]), ["a", "b"])
    with pytest.raises(ValueError, match="min_count must be at least 1"):
        macro_average(np.array([True]), ["a"], min_count=0)


# ---------------------------------------------------------------- helpers


def import_into(directory: Path, fmt: str, *argv: str) -> Path:
    out = directory / f"{fmt}.yaml"
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", fmt, *argv, "-o", str(out)])
    assert args.handler(args) == 0
    return out


def run_scored(
    pytester: pytest.Pytester, checklist: Path, scores: Path
) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    report = pytester.path / "report"
    result = pytester.runpytest(
        str(checklist), f"--vl-model=scores:{scores}", f"--vl-report={report}"
    )
    matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    return result, {row["test"]: row for row in matrix["results"]}


# ---------------------------------------------------------------- scores files


def _ref(written: str) -> ImageRef:
    return ImageRef("file", written, "/images/" + written)


def test_scores_file_accepts_a_repeated_pair_with_the_same_score(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = {"image": "11.jpg", "text": "a dog", "score": 0.75}
    path.write_text("\n".join(json.dumps(x) for x in (line, line, {**line, "text": "a cat"})))
    scores = PrecomputedScores(path)
    pairs = [RefPair(_ref("11.jpg"), "a dog", "e1"), RefPair(_ref("11.jpg"), "a cat", "e2")]
    assert scores.score_refs(pairs).tolist() == [0.75, 0.75]


def test_scores_file_refuses_a_repeated_pair_with_another_score(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = {"image": "11.jpg", "text": "a dog", "score": 0.75}
    path.write_text(json.dumps(line) + "\n\n" + json.dumps({**line, "score": 0.5}) + "\n")
    with pytest.raises(ScoresFileError) as error:
        PrecomputedScores(path)
    assert str(error.value) == (
        f"{path}:3: score 0.5 for image '11.jpg' with text 'a dog', which line 1 scores "
        "0.75; a pair has one score"
    )


# ---------------------------------------------------------------- SVO-Probes

S1, S2, S3 = "A dog catches a frisbee.", "A chef chops onions.", "A girl rides a horse."
SVO_HEADER = (
    "sentence,subj,verb,obj,pos_triplet,neg_triplet,pos_url,neg_url,"
    "pos_image_id,neg_image_id,subj_neg,verb_neg,obj_neg"
)
# (sentence, positive id, negative id, subj_neg, verb_neg, obj_neg), in the released order.
# The positive (S1, 11) repeats three times, (S2, 13) twice; the negatives (S1, 21) and
# (S2, 25) repeat; row 7 has two flags (subject and verb) and is left out.
SVO_ROWS = [
    (S1, 11, 21, True, False, False),
    (S1, 11, 22, False, True, False),
    (S1, 11, 23, False, False, True),
    (S1, 12, 21, True, False, False),
    (S2, 13, 24, False, True, False),
    (S2, 13, 25, False, False, True),
    (S2, 14, 25, False, False, True),
    (S3, 15, 26, True, True, False),
    (S3, 16, 27, False, False, True),
]
# the model's match probability per (sentence, image id); >= 0.5 predicts a match
SVO_PROBABILITY = {
    (S1, 11): 0.9,  # positive, right
    (S1, 12): 0.4,  # positive, wrong
    (S2, 13): 0.7,  # positive, right
    (S2, 14): 0.2,  # positive, wrong
    (S3, 15): 0.9,  # only in the two-flag row
    (S3, 16): 0.6,  # positive, right
    (S1, 21): 0.1,  # negative, right
    (S1, 22): 0.8,  # negative, wrong
    (S1, 23): 0.3,  # negative, right
    (S2, 24): 0.45,  # negative, right
    (S2, 25): 0.55,  # negative, wrong
    (S3, 26): 0.1,  # only in the two-flag row
    (S3, 27): 0.7,  # negative, wrong
}


def _svo_csv(path: Path) -> Path:
    lines = [SVO_HEADER]
    for sentence, pos, neg, *flags in SVO_ROWS:
        urls = f"http://img.example/{pos}.jpg,http://img.example/{neg}.jpg"
        lines.append(
            f'"{sentence}",s,v,o,"s,v,o","s,v,x",{urls},{pos},{neg},'
            + ",".join(str(flag) for flag in flags)
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _svo_analysis(rows: list[tuple[Any, ...]]) -> tuple[float, float, float]:
    """The authors' notebook by hand: rows with one flag, unique (sentence, image) pairs per
    side, positive = predicted match, negative = predicted no match, average of the two."""
    kept = [row for row in rows if sum(row[3:]) == 1]
    positives = {(row[0], row[1]) for row in kept}
    negatives = {(row[0], row[2]) for row in kept}
    pos = sum(SVO_PROBABILITY[p] >= 0.5 for p in positives) / len(positives)
    neg = sum(SVO_PROBABILITY[n] < 0.5 for n in negatives) / len(negatives)
    return pos, neg, (pos + neg) / 2


def test_svo_probes_gives_the_analysis_accuracies(pytester: pytest.Pytester) -> None:
    source = _svo_csv(pytester.path / "svo_probes.csv")
    checklist = import_into(pytester.path, "svo-probes", str(source), "--image-root", "images")
    # one score line per CSV row and side, as a user scoring the CSV row by row writes them:
    # repeated pairs repeat their line with the same score
    lines = [
        json.dumps(
            {"image": f"{image}.jpg", "text": row[0], "score": SVO_PROBABILITY[row[0], image]}
        )
        for row in SVO_ROWS
        for image in row[1:3]
    ]
    scores = pytester.path / "scores.jsonl"
    scores.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["svo_probes"]
    metrics = row["metrics"]
    # 5 unique positives (S1,11 S1,12 S2,13 S2,14 S3,16), 3 right: 3/5
    # 6 unique negatives (S1,21 S1,22 S1,23 S2,24 S2,25 S3,27), 3 right: 3/6
    assert (metrics["positive_accuracy"], metrics["negative_accuracy"]) == (0.6, 0.5)
    assert metrics["average_accuracy"] == pytest.approx(0.55)
    assert _svo_analysis(SVO_ROWS) == (0.6, 0.5, 0.55)
    # subject: positives S1,11 (right) S1,12 (wrong); negative S1,21 (right)
    assert metrics["neg_type=subject/positive_accuracy"] == 0.5
    assert metrics["neg_type=subject/negative_accuracy"] == 1.0
    assert metrics["neg_type=subject/average_accuracy"] == 0.75
    # verb: positives S1,11 S2,13 (both right); negatives S1,22 (wrong) S2,24 (right)
    assert metrics["neg_type=verb/positive_accuracy"] == 1.0
    assert metrics["neg_type=verb/negative_accuracy"] == 0.5
    # object: positives S1,11 S2,13 S3,16 right, S2,14 wrong: 3/4; negatives S1,23 right,
    # S2,25 and S3,27 wrong: 1/3; average (3/4 + 1/3) / 2
    assert metrics["neg_type=object/positive_accuracy"] == 0.75
    assert metrics["neg_type=object/negative_accuracy"] == pytest.approx(1 / 3)
    assert metrics["neg_type=object/average_accuracy"] == pytest.approx((3 / 4 + 1 / 3) / 2)
    for side in ("subject", "verb", "object"):
        assert _svo_type_analysis(side) == (
            metrics[f"neg_type={side}/positive_accuracy"],
            metrics[f"neg_type={side}/negative_accuracy"],
        )
    # the micro pass rate is over the 11 unique pairs: 6 right
    assert (row["n"], row["passed"]) == (11, 6)
    result.assert_outcomes(passed=1)


def _svo_type_analysis(side: str) -> tuple[float, float]:
    """The notebook's per-type numbers: the same analysis on that type's rows only."""
    column = {"subject": 3, "verb": 4, "object": 5}[side]
    pos, neg, _ = _svo_analysis([row for row in SVO_ROWS if row[column] and sum(row[3:]) == 1])
    return pos, neg


def test_svo_probes_import_names_images_by_id(tmp_path: Path, capsys) -> None:
    source = _svo_csv(tmp_path / "svo_probes.csv")
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "img-11.png").write_bytes(b"")
    out = tmp_path / "svo.yaml"
    run_cli(
        "svo-probes",
        str(source),
        "--image-root",
        str(tmp_path / "images"),
        "--image-pattern",
        "img-{id}.png",
        "--form",
        "both",
        "-o",
        str(out),
    )
    err = capsys.readouterr().err
    assert f"{source}: left out 1 row(s) whose negative differs in more than one" in err
    assert "10 of 11 images are not in" in err  # all but 11; 15 and 26 are only in row 7
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    match = {e["id"]: e for e in doc["tests"][0]["examples"]}
    assert list(match) == [
        "0-pos",
        "0-neg",
        "1-neg",
        "2-neg",
        "3-pos",
        "4-pos",
        "4-neg",
        "5-neg",
        "6-pos",
        "8-pos",
        "8-neg",
    ]
    assert match["0-pos"] == {
        "id": "0-pos",
        "image": "img-11.png",
        "caption": S1,
        "label": "match",
        "neg_type": ["subject", "verb", "object"],
    }
    assert match["4-pos"]["neg_type"] == ["verb", "object"]
    assert match["5-neg"]["neg_type"] == "object"
    pairs = doc["tests"][1]["examples"]
    assert [p["id"] for p in pairs] == ["0", "1", "2", "3", "4", "5", "6", "8"]
    assert load_checklist(out).tests[0].examples[0].neg_types == ("subject", "verb", "object")


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", *argv])
    status = args.handler(args)
    assert status == 0
    return status


def test_svo_probes_pattern_needs_a_root_and_an_id(tmp_path: Path, capsys) -> None:
    source = _svo_csv(tmp_path / "svo_probes.csv")
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    for extra, message in (
        (["--image-pattern", "{id}.png"], "--image-pattern names files under --image-root"),
        (["--image-root", "x", "--image-pattern", "same.png"], "must contain {id}"),
    ):
        args = parser.parse_args(["import", "svo-probes", str(source), "-o", "o.yaml", *extra])
        assert args.handler(args) == 2
        assert message in capsys.readouterr().err


# ---------------------------------------------------------------- ARO

# (relation, right?) per VG-Relation record: "next to" is on ARO's symmetric list
VG_RELATION = [
    ("on", True),
    ("on", True),
    ("on", False),
    ("holding", False),  # a tie: wrong here and in ARO's code (the false caption is first)
    ("holding", False),
    ("next to", True),
    ("next to", True),
    ("wearing", True),
]


def test_aro_vg_relation_macro_average(pytester: pytest.Pytester) -> None:
    records = [
        {
            "image_path": f"{index}.jpg",
            **dict(zip(("bbox_x", "bbox_y", "bbox_w", "bbox_h"), (0, 0, 10, 10), strict=True)),
            "true_caption": f"the a{index} is {relation} the b",
            "false_caption": f"the b is {relation} the a{index}",
            "relation_name": relation,
        }
        for index, (relation, _) in enumerate(VG_RELATION)
    ]
    source = pytester.path / "visual_genome_relation.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    checklist = import_into(pytester.path, "aro", str(source))
    test = yaml.safe_load(checklist.read_text(encoding="utf-8"))["tests"][0]
    assert test["macro"]["tag"] == "relation" and "min_count" not in test["macro"]
    assert test["macro"]["exclude"] == list(SYMMETRIC_RELATIONS) and len(SYMMETRIC_RELATIONS) == 157
    lines = []
    for index, (relation, right) in enumerate(VG_RELATION):
        false = 0.5 if relation == "holding" and index == 3 else (0.2 if right else 0.8)
        for text, score in (
            (records[index]["true_caption"], 0.5),
            (records[index]["false_caption"], false),
        ):
            lines.append(
                json.dumps(
                    {"image": f"{index}.jpg", "crop": [0, 0, 10, 10], "text": text, "score": score}
                )
            )
    scores = pytester.path / "scores.jsonl"
    scores.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["vg_relation"]
    # micro (ARO's script): 5 of 8 right
    assert (row["n"], row["passed"]) == (8, 5)
    # macro (ARO's notebook): "next to" left out; on 2/3, holding 0/2, wearing 1/1
    assert row["metrics"]["macro_average"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert row["metrics"]["macro_values"] == 3
    result.assert_outcomes(passed=1)


def test_aro_vg_attribution_macro_needs_25_examples(tmp_path: Path) -> None:
    source = Path(__file__).parents[1] / "fixtures" / "importers" / "aro"
    out = import_into(tmp_path, "aro", str(source / "visual_genome_attribution.json"))
    (test,) = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]
    assert test["macro"] == {"tag": "attributes", "min_count": 25}
    assert load_checklist(out).tests[0].macro == MacroSpec("attributes", 25, ())


# ---------------------------------------------------------------- VL-CheckList


def test_vl_checklist_pairs_first_mirrors_the_evaluator(tmp_path: Path, capsys) -> None:
    source = tmp_path / "data" / "Relation" / "swig_action.json"
    source.parent.mkdir(parents=True)
    records = [
        ["a/1.jpg", {"POS": ["man rides horse", "man on horse"], "NEG": ["man feeds horse", "x"]}],
        ["a/2.jpg", {"POS": ["dog chases cat", "dog runs"], "NEG": ["dog bites cat"]}],
    ]
    source.write_text(json.dumps(records), encoding="utf-8")
    (tmp_path / "images" / "swig" / "a").mkdir(parents=True)
    (tmp_path / "images" / "swig" / "a" / "1.jpg").write_bytes(b"")
    out = tmp_path / "vlc.yaml"
    run_cli(
        "vl-checklist",
        str(source),
        "--pairs",
        "first",
        "--image-root",
        str(tmp_path / "images"),
        "-o",
        str(out),
    )
    examples = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"][0]["examples"]
    assert [(e["id"], e["caption"], e["negatives"]) for e in examples] == [
        ("0", "man rides horse", ["man feeds horse"]),
        ("1", "dog chases cat", ["dog bites cat"]),
    ]
    err = capsys.readouterr().err
    assert f"{source}: 1 of 2 record(s) have no image under {tmp_path / 'images'}" in err
    # the default pairs positive i with negative i, so the lists must match in length
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", "vl-checklist", str(source), "-o", str(out)])
    assert args.handler(args) == 2
    assert "record 1: POS has 2 texts and NEG 1" in capsys.readouterr().err


# ---------------------------------------------------------------- all_of groups


def test_all_of_rate_counts_a_group_right_only_when_every_member_is() -> None:
    # pair p1: both right; p2: one wrong; p3: alone and right; untagged: in no group;
    # p4: right so far but a member was unscored, so it is left out
    values = ["p1", "p1", "p2", "p2", "p3", None, "p4"]
    correct = np.array([True, True, True, False, True, False, True])
    out = all_of_rate(correct, values, unscored={"p4"})
    assert out == AllOfRate(2 / 3, groups=3, left_out=1)
    assert all_of_rate(np.array([True]), [None]) == AllOfRate(None, 0, 0)
    with pytest.raises(ValueError, match="1 tag values for 2 outcomes"):
        all_of_rate(np.array([True, True]), ["a"])


ALL_OF = """\
vlcheck: 1
tests:
  - id: whatsup
    capability: spatial/relation
    task: caption
    threshold: 0.1
    all_of: [pair, set]
    examples:
%s
"""


def test_all_of_reports_pair_and_set_rates_in_matrix(pytester: pytest.Pytester) -> None:
    # (id, pair, set, right?): pair a both right, pair b one wrong, pair c both right;
    # set s1 = {a, b} is wrong, s2 = {c} right (unscored members: the unit test above)
    rows = [("a1", "a", "s1", True), ("a2", "a", "s1", True), ("b1", "b", "s1", True)]
    rows += [("b2", "b", "s1", False), ("c1", "c", "s2", True), ("c2", "c", "s2", True)]
    examples, lines = [], []
    for name, pair, group, right in rows:
        examples.append(
            f"      - {{id: {name}, image: {name}.jpg, caption: {name} yes, "
            f"negatives: [{name} no], tags: {{pair: {pair}, set: {group}}}}}"
        )
        for text, score in ((f"{name} yes", 0.5), (f"{name} no", 0.2 if right else 0.8)):
            lines.append(json.dumps({"image": f"{name}.jpg", "text": text, "score": score}))
    checklist = pytester.path / "whatsup.yaml"
    checklist.write_text(ALL_OF % "\n".join(examples), encoding="utf-8")
    scores = pytester.path / "scores.jsonl"
    scores.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = pytester.path / "report"
    result = pytester.runpytest(
        str(checklist), f"--vl-model=scores:{scores}", f"--vl-report={report}"
    )
    result.assert_outcomes(passed=1)
    (row,) = json.loads((report / "matrix.json").read_text(encoding="utf-8"))["results"]
    assert (row["n"], row["passed"]) == (6, 5)
    assert row["metrics"]["all_of_pair"] == pytest.approx(2 / 3)  # a, c right; b wrong
    assert row["metrics"]["all_of_pair_groups"] == 3
    assert row["metrics"]["all_of_set"] == 1 / 2  # s1 wrong, s2 right
    assert row["metrics"]["all_of_set_groups"] == 2
