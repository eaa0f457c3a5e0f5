"""Several models in one run: each later model's delta and paired p-values against the first.

Hand computations (examples paired by id; b lost, c gained against the first model):
- b=8, c=1: X ~ Bin(9, 1/2), mid-p = 2 P(X <= 1) - P(X = 1) = (2*10 - 9) / 512 = 11/512
- b=2, c=0: mid-p = P(X = 0) = 1/4
- Holm over (11/512, 1/4): 2 * 11/512 = 11/256, then max(11/256, 1 * 1/4) = 1/4
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers.colour_scorer import SOURCE
from PIL import Image

from pytest_vlcheck.gates.reference import with_reference
from pytest_vlcheck.metrics.paired import discordant_pairs
from pytest_vlcheck.results import CapabilityResult, ExampleOutcome, ResultFormatError


def result(test: str, model: str, right: list[bool]) -> CapabilityResult:
    passed = sum(right)
    return CapabilityResult(
        file="t.yaml",
        test=test,
        capability="a/b",
        task="caption",
        model=model,
        n=len(right),
        passed=passed,
        pass_rate=passed / len(right) if right else 0.0,
        ci_low=0.0,
        ci_high=1.0,
        threshold=0.5,
        chance=0.5,
        status="passed" if passed / len(right) >= 0.5 else "failed",
        outcomes=tuple(ExampleOutcome(str(i), ok, False, []) for i, ok in enumerate(right)),
    )


def test_discordant_pairs_match_by_id() -> None:
    ref = {"a": True, "b": True, "c": False, "d": True}
    other = {"a": False, "b": True, "c": True, "e": False}
    assert discordant_pairs(ref, other) == (3, 1, 1)


def test_deltas_and_holm_by_hand() -> None:
    # 8 examples lost, 1 gained, 3 right in both
    ref_left = [True] * 8 + [False] + [True] * 3
    new_left = [False] * 8 + [True] + [True] * 3
    results = [
        result("left", "a", ref_left),
        result("left", "b", new_left),
        result("right", "a", [True] * 8),
        result("right", "b", [False] * 2 + [True] * 6),
        result("only_b", "b", [True]),
    ]
    out = with_reference(results, ["a", "b"])
    assert [r.reference for r in out if r.model == "a"] == [None, None]
    assert out[4].reference is None  # the first model did not measure that test
    assert out[1].reference.to_json() == {
        "model": "a",
        "delta_pts": round(100 * (4 / 12 - 11 / 12), 9),
        "p_value": 11 / 512,
        "p_holm": 11 / 256,
        "n_paired": 12,
        "discordant": [8, 1],
    }
    assert out[3].reference.to_json() == {
        "model": "a",
        "delta_pts": -25.0,
        "p_value": 0.25,
        "p_holm": 0.25,
        "n_paired": 8,
        "discordant": [2, 0],
    }
    errored = dataclasses.replace(results[2], status="error", n=0)
    assert with_reference([errored, results[3]], ["a", "b"])[1].reference is None
    assert with_reference(results, ["a"]) == results


def test_reference_round_trips_through_json_and_is_validated() -> None:
    [_, other] = with_reference(
        [result("t", "a", [True, True]), result("t", "b", [True, False])], ["a", "b"]
    )
    row = other.to_json()
    assert CapabilityResult.from_json(row).reference == other.reference
    assert "reference" not in result("t", "a", [True]).to_json()
    with pytest.raises(ResultFormatError, match=r"reference\.discordant"):
        CapabilityResult.from_json({**row, "reference": {**row["reference"], "discordant": [1]}})
    with pytest.raises(ResultFormatError, match="n_paired"):
        CapabilityResult.from_json({**row, "reference": {"model": "a", "delta_pts": 1.0}})


SWAPPED = """

class SwappedScorer(ColourScorer):
    name = "swapped"
    fingerprint = "swapped-v1"

    def encode_images(self, images):
        return super().encode_images(images)[:, [1, 0, 2]]  # sees red as green and back


def make_swapped():
    return SwappedScorer()
"""


def examples(prefix: str, image: str, caption: str, negative: str, count: int) -> list[str]:
    return [
        f"      - {{id: {prefix}{i}, image: {image}, caption: {caption}, negatives: [{negative}]}}"
        for i in range(count)
    ]


def test_two_model_run_reports_deltas(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(colour_model=SOURCE + SWAPPED)
    for name, rgb in {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}.items():
        Image.new("RGB", (8, 8), rgb).save(pytester.path / f"{name}.png")
    head = "    capability: attribute/color\n    task: caption\n    threshold: 0.4\n    examples:"
    lines = ["vlcheck: 1", "tests:", "  - id: left", head]
    # plain is right on red and blue, swapped wrong on red; a green image captioned "red"
    # is wrong for plain and right for swapped
    lines += examples("r", "red.png", "red", "green", 8)
    lines += examples("g", "green.png", "red", "green", 1)
    lines += examples("b", "blue.png", "blue", "red", 3)
    lines += ["  - id: right", head]
    lines += examples("r", "red.png", "red", "green", 2)
    lines += examples("b", "blue.png", "blue", "red", 6)
    pytester.makefile(".yaml", colours="\n".join(lines) + "\n")
    result = pytester.runpytest(
        "--vl-model=plain=py:colour_model:make",
        "--vl-model=swapped=py:colour_model:make_swapped",
        "--vl-report=rep",
    )
    result.assert_outcomes(passed=3, failed=1)  # swapped fails left on its threshold alone
    rows = json.loads((pytester.path / "rep" / "matrix.json").read_text())["results"]
    by_key = {(r["test"], r["model"]): r for r in rows}
    assert "reference" not in by_key[("left", "plain")]
    # the examples share 3 images (2 in "right"): fewer clusters than the gate's clustered
    # test needs, so the deltas are tested as the gate would test them: not at all
    assert by_key[("left", "swapped")]["reference"] == {
        "model": "plain",
        "delta_pts": round(100 * (4 / 12 - 11 / 12), 9),
        "p_value": 1.0,
        "p_holm": 1.0,
        "n_paired": 12,
        "discordant": [8, 1],
        "test": "few_clusters",
    }
    right = by_key[("right", "swapped")]["reference"]
    assert (right["delta_pts"], right["p_value"], right["test"]) == (-25.0, 1.0, "few_clusters")
