"""Imported benchmarks run under pytest: import a fixture, score it from a ``scores:`` file,
check the verdicts and the numbers against values worked out by hand."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_vlcheck.checklist.loader import load_checklist
from pytest_vlcheck.cli.import_command import add_import_command
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.tasks import get_task

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
Rule = Callable[[str, str, int, int], float]
"""score(test id, example id, image index, text index) for an example's image x text grid."""


def import_into(directory: Path, fmt: str, *argv: str) -> Path:
    out = directory / f"{fmt}.yaml"
    parser = argparse.ArgumentParser(prog="vlcheck")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", fmt, *argv, "-o", str(out)])
    assert args.handler(args) == 0
    return out


def _line(ref: ImageRef, text: str, score: float, example: str | None) -> str:
    record: dict[str, Any] = {"image": ref.written, "text": text, "score": score}
    if ref.crop is not None:
        record["crop_relative" if ref.crop_relative else "crop"] = list(ref.crop)
    if example is not None:
        record["example"] = example
    return json.dumps(record)


def scores_for(checklist: Path, rule: Rule, out: Path) -> Path:
    """A scores file with one line per (example, image, text) of the checklist."""
    lines = []
    for test in load_checklist(checklist).tests:
        for example in test.examples:
            images, texts = get_task(test.task).grid(example)
            for i, ref in enumerate(images):
                for j, text in enumerate(texts):
                    lines.append(_line(ref, text, rule(test.id, example.id, i, j), example.id))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def run_scored(
    pytester: pytest.Pytester, checklist: Path, scores: Path, *extra: str
) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    report = pytester.path / "report"
    result = pytester.runpytest(
        str(checklist),
        f"--vl-model=scores:{scores}",
        f"--vl-report={report}",
        "-p",
        "no:cacheprovider",
        *extra,
    )
    matrix = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    return result, {row["test"]: row for row in matrix["results"]}


# ---------------------------------------------------------------- predicate-noun

# s(I, S) for the fixture's images and sentences. Pair 0-1 gets both triplets right; in
# pair 2-3 image aa04 ties its two sentences, which the paper's strict '>' counts as wrong.
PN_SCORES = {
    ("aa01.jpg", "a man is riding a horse"): 0.9,
    ("aa01.jpg", "a man is holding a guitar"): 0.2,
    ("aa02.jpg", "a man is holding a guitar"): 0.7,
    ("aa02.jpg", "a man is riding a horse"): 0.3,
    ("aa03.jpg", "a woman is wearing a hat"): 0.6,
    ("aa03.jpg", "a boy is wearing a hat"): 0.4,
    ("aa04.jpg", "a boy is wearing a hat"): 0.5,
    ("aa04.jpg", "a woman is wearing a hat"): 0.5,
}


def _paper_pair_accuracy(records: list[dict[str, Any]]) -> tuple[float, float]:
    """Seed 000's metric by hand: f(t1, t2) = 1 iff s(I1,S1) > s(I1,S2) and
    s(I2,S2) > s(I2,S1), averaged over pairs; and the per-triplet accuracy."""
    pairs, triplets = [], []
    for first, second in zip(records[::2], records[1::2], strict=True):
        i1, s1, s2 = first["img_filename"], first["sentence_target"], first["sentence_distractor"]
        i2 = second["img_filename"]
        right1 = PN_SCORES[(i1, s1)] > PN_SCORES[(i1, s2)]
        right2 = PN_SCORES[(i2, s2)] > PN_SCORES[(i2, s1)]
        pairs.append(right1 and right2)
        triplets += [right1, right2]
    return sum(pairs) / len(pairs), sum(triplets) / len(triplets)


@pytest.mark.parametrize("crop", [False, True])
def test_predicate_noun_pass_rate_is_the_papers_pair_accuracy(
    pytester: pytest.Pytester, crop: bool
) -> None:
    source = FIXTURES / "predicate_noun" / "eval_set.json"
    records = json.loads(source.read_text())
    pair_accuracy, triplet_accuracy = _paper_pair_accuracy(records)
    assert (pair_accuracy, triplet_accuracy) == (0.5, 0.75)
    checklist = import_into(
        pytester.path,
        "predicate-noun",
        str(source),
        "--threshold",
        "0.5",
        *(["--crop"] if crop else []),
    )
    lines = []
    for record in records:  # no example ids: the scores join on the image as written
        box = record["relationship_target"]["bounding_box"]
        for (image, text), score in PN_SCORES.items():
            if image == record["img_filename"]:
                line = {"image": image, "text": text, "score": score}
                if crop:
                    line["crop_relative"] = box
                lines.append(json.dumps(line))
    scores = pytester.path / "pn_scores.jsonl"
    scores.write_text("\n".join(lines) + "\n")

    result, rows = run_scored(pytester, checklist, scores)
    result.assert_outcomes(passed=1)
    (row,) = rows.values()
    assert row["test"] == ("predicate_noun_cropped" if crop else "predicate_noun")
    assert (row["n"], row["passed"], row["pass_rate"]) == (2, 1, pair_accuracy)
    assert row["metrics"]["text_score"] == pair_accuracy
    assert row["metrics"]["caption_choice_accuracy"] == triplet_accuracy
    assert row["slices"]["distractor"]["predicate"]["pass_rate"] == 1.0
    assert row["slices"]["distractor"]["noun"]["pass_rate"] == 0.0

    result, _ = run_scored(pytester, checklist, scores, "--vl-threshold", "0.6")
    result.assert_outcomes(failed=1)


# ---------------------------------------------------------------- the other formats


def test_sugarcrepe_verdicts(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path, "sugarcrepe", str(FIXTURES / "sugarcrepe"), "--threshold", "0.75"
    )

    def rule(test: str, example: str, i: int, j: int) -> float:
        if (test, example) == ("swap_obj", "1"):
            return [0.4, 0.6][j]  # the negative wins
        return [0.8, 0.1][j]

    result, rows = run_scored(
        pytester, checklist, scores_for(checklist, rule, pytester.path / "s.jsonl")
    )
    result.assert_outcomes(passed=1, failed=1)
    assert (rows["replace_att"]["pass_rate"], rows["replace_att"]["status"]) == (1.0, "passed")
    assert (rows["swap_obj"]["pass_rate"], rows["swap_obj"]["status"]) == (0.5, "failed")


def test_svo_probes_match_accuracies_by_negative_type(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path, "svo-probes", str(FIXTURES / "svo_probes" / "svo_probes.csv")
    )
    probability = {"0-pos": 0.8, "0-neg": 0.2, "1-neg": 0.1, "7-pos": 0.5, "7-neg": 0.6}
    scores = scores_for(checklist, lambda t, e, i, j: probability[e], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["svo_probes"]
    # rows 0 and 1 share the positive 0-pos (subject and verb); right: 0-pos, 0-neg, 1-neg,
    # 7-pos (0.5 >= cut-off 0.5); wrong: 7-neg
    assert (row["n"], row["passed"]) == (5, 4)
    metrics = row["metrics"]
    assert metrics["positive_accuracy"] == 1.0
    assert metrics["negative_accuracy"] == pytest.approx(2 / 3)
    assert metrics["neg_type=verb/positive_accuracy"] == 1.0
    assert metrics["neg_type=verb/negative_accuracy"] == 1.0
    assert metrics["neg_type=object/average_accuracy"] == 0.5
    assert metrics["neg_type=subject/average_accuracy"] == 1.0
    result.assert_outcomes(passed=1)  # 4/5 >= the chance threshold 0.5


def test_compun_prompt_ensemble_uses_the_mean(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path,
        "compun",
        str(FIXTURES / "compun" / "Compun.csv"),
        "--captions",
        str(FIXTURES / "compun" / "captions.json"),
    )
    grid = {  # example -> image index -> score per prompt
        # the first prompt alone prefers distractor 1; the mean (0.6 vs 0.45) picks the truth
        "bird cage": [[0.3, 0.9], [0.5, 0.4], [0.1, 0.1]],
        "sea lion": [[0.2, 0.2, 0.2], [0.9, 0.1, 0.1], [0.0, 0.0, 0.0]],  # 0.2 < 0.3667
        "Door knob": [[0.7], [0.2], [0.7]],  # a tie with distractor 2 fails
    }
    scores = scores_for(checklist, lambda t, e, i, j: grid[e][i][j], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["compun_examples"]
    assert (row["n"], row["passed"]) == (3, 1)
    result.assert_outcomes(passed=1)  # 1/3 >= the chance threshold 0.3333


def test_winoground_scores_and_tag_slices(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path, "winoground", str(FIXTURES / "winoground" / "examples.jsonl")
    )
    grid = {  # s(image i, caption j)
        "0": [[0.9, 0.1], [0.2, 0.8]],  # text, image and group right
        "1": [[0.6, 0.5], [0.7, 0.8]],  # text right; image: caption 0 prefers image 1
        "2": [[0.1, 0.9], [0.9, 0.1]],  # all wrong
    }
    scores = scores_for(checklist, lambda t, e, i, j: grid[e][i][j], pytester.path / "s.jsonl")
    result, rows = run_scored(pytester, checklist, scores)
    row = rows["winoground"]
    assert row["metrics"]["text_score"] == pytest.approx(2 / 3)
    assert row["metrics"]["image_score"] == pytest.approx(1 / 3)
    assert row["metrics"]["group_score"] == pytest.approx(1 / 3)
    assert row["pass_rate"] == pytest.approx(1 / 3)  # criterion: group
    assert row["slices"]["collapsed_tag"]["Object"]["pass_rate"] == 1.0
    assert row["slices"]["collapsed_tag"]["Both"]["pass_rate"] == 0.0
    result.assert_outcomes(passed=1)


def test_aro_crops_and_ties(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path,
        "aro",
        str(FIXTURES / "aro" / "visual_genome_relation.json"),
        str(FIXTURES / "aro" / "coco_order_test.json"),
    )

    def rule(test: str, example: str, i: int, j: int) -> float:
        if (test, example) in (("vg_relation", "1"), ("coco_order", "0.1")) and j == 1:
            return 1.0  # a negative ties the true caption: wrong on VG, right on Order
        return 1.0 if j == 0 else 0.5

    scores = scores_for(checklist, rule, pytester.path / "s.jsonl")
    assert '"crop": [10.0, 20.0, 100.0, 80.0]' in scores.read_text()
    result, rows = run_scored(pytester, checklist, scores)
    assert (rows["vg_relation"]["n"], rows["vg_relation"]["passed"]) == (2, 1)
    assert (rows["vg_relation"]["passed"], rows["vg_relation"]["ties"]) == (1, 1)
    # ARO's np.argmax picks the true caption (listed first): `ties: first` counts it right
    assert (rows["coco_order"]["n"], rows["coco_order"]["passed"]) == (3, 3)
    assert rows["coco_order"]["ties"] == 1
    assert rows["vg_relation"]["slices"]["relation"]["holding"]["pass_rate"] == 0.0
    result.assert_outcomes(passed=2)


def test_vl_checklist_tree(pytester: pytest.Pytester) -> None:
    checklist = import_into(
        pytester.path, "vl-checklist", str(FIXTURES / "vl_checklist" / "data"), "--threshold", "0.9"
    )

    def rule(test: str, example: str, i: int, j: int) -> float:
        if example == "1.1":  # one SWiG paraphrase pair goes wrong
            return [0.1, 0.9][j]
        return [0.9, 0.1][j]

    result, rows = run_scored(
        pytester, checklist, scores_for(checklist, rule, pytester.path / "s.jsonl")
    )
    swig = rows["object-size-small-swig_agent"]
    assert (swig["n"], swig["passed"], swig["status"]) == (4, 3, "failed")
    assert swig["slices"]["paraphrase"]["1"]["pass_rate"] == 0.5
    assert rows["attribute-color-vg"]["status"] == "passed"
    result.assert_outcomes(passed=2, failed=1)
