"""Linguistic priors end to end: ``--vl-prior py:...`` through pytest, numbers by hand.

The model is a ``scores:`` file, so which units it gets right is exact; the priors are
``py:`` factories written into the pytester directory. ``chance`` prefers the true caption of
even-numbered examples and the negative of odd ones (for group examples: caption a when even,
b when odd); ``truth`` always prefers the true caption.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

PRIORS = """
def _favoured(text, truth_only):
    kind, index = text[0], int(text[1:].rstrip("ab"))
    true_side = kind == "c" or text.endswith("a")
    return true_side if truth_only else true_side == (index % 2 == 0)

class Prior:
    def __init__(self, truth_only):
        self.truth_only = truth_only
    def text_nll(self, texts):
        return [1.0 if _favoured(t, self.truth_only) else 2.0 for t in texts]

def truth():
    return Prior(True)

class Counted(Prior):
    def text_nll(self, texts):
        with open("prior_calls.log", "a") as log:
            log.write(f"text_nll {len(texts)}\\n")
        return super().text_nll(texts)

def counted():
    with open("prior_calls.log", "a") as log:
        log.write("load\\n")
    return Counted(False)

counted.vlcheck_fingerprint = "counted-prior-1"

def chance():
    return Prior(False)
"""

CHECKLIST = """vlcheck: 1
tests:
  - id: cap
    capability: relation/cap
    task: caption
    threshold: 0.6
    hard_threshold: 0.3
    examples:
{caption_examples}
  - id: grp
    capability: relation/grp
    task: group
    criterion: text
    threshold: 0.5
    hard_threshold: 0.6
    examples:
{group_examples}
  - id: img
    capability: object/img
    task: image
    threshold: 0.5
    examples:
      - {{id: '0', text: t0, image: i0.png, distractors: [d0.png]}}
"""

CAPTION_WRONG = {1, 3, 5}  # of 10: accuracy 7/10; odd ones are hard for `chance`
GROUP_WRONG = {(0, 1), (1, 0)}  # (example, triplet) of 4 x 2: 6/8; both are hard


def _write_suite(pytester: pytest.Pytester) -> None:
    caption = "\n".join(
        f"      - {{id: '{i}', image: c{i}.png, caption: c{i}, negatives: [n{i}]}}"
        for i in range(10)
    )
    group = "\n".join(
        f"      - {{id: '{i}', images: [a{i}.png, b{i}.png], captions: [g{i}a, g{i}b]}}"
        for i in range(4)
    )
    pytester.makefile(
        ".yaml", suite=CHECKLIST.format(caption_examples=caption, group_examples=group)
    )
    pytester.makepyfile(e2e_lm_priors=PRIORS)
    records = []
    for i in range(10):
        wrong = i in CAPTION_WRONG
        records.append({"image": f"c{i}.png", "text": f"c{i}", "score": 0.4 if wrong else 0.6})
        records.append({"image": f"c{i}.png", "text": f"n{i}", "score": 0.5})
    for i in range(4):
        for t, (image, own, other) in enumerate(((f"a{i}", "a", "b"), (f"b{i}", "b", "a"))):
            wrong = (i, t) in GROUP_WRONG
            own_score, other_score = (0.4, 0.6) if wrong else (0.6, 0.4)
            records.append({"image": f"{image}.png", "text": f"g{i}{own}", "score": own_score})
            records.append({"image": f"{image}.png", "text": f"g{i}{other}", "score": other_score})
    records.append({"image": "i0.png", "text": "t0", "score": 0.6})
    records.append({"image": "d0.png", "text": "t0", "score": 0.5})
    pytester.path.joinpath("model.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n"
    )


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    _write_suite(pytester)
    return pytester


def _rows(pytester: pytest.Pytester) -> dict[str, dict]:
    doc = json.loads((pytester.path / "rep" / "matrix.json").read_text())
    return {row["test"]: row for row in doc["results"]}


def test_chance_prior_numbers_by_hand_in_every_output(suite: pytest.Pytester) -> None:
    result = suite.runpytest(
        "--vl-model=m=scores:model.jsonl",
        "--vl-prior=py:e2e_lm_priors:chance",
        "--vl-report=rep",
        "--junitxml=junit.xml",
    )
    # grp reaches its text-score threshold (2/4 >= 50%) but not its hard threshold
    result.assert_outcomes(passed=2, failed=1)
    rows = _rows(suite)
    cap = rows["cap"]["prior"]
    # 10 examples; the prior is right on the 5 even ones; hard = odd = {1, 3, 5, 7, 9}, of
    # which the model passes 7 and 9: hard accuracy 2/5, gap 0.7 - 0.4 = 0.3.
    assert cap["applicable"] is True and cap["priors"] == ["chance"]
    assert (cap["n"], cap["n_hard"], cap["hard_passed"]) == (10, 5, 2)
    assert cap["prior_accuracy"] == pytest.approx(0.5)
    assert cap["accuracy"] == pytest.approx(0.7)
    assert cap["hard_accuracy"] == pytest.approx(0.4)
    assert cap["linguistic_gap"] == pytest.approx(0.3)
    assert cap["hard_threshold"] == 0.3 and cap["hard_threshold_met"] is True
    assert sum(map(sum, cap["grid"]["n"])) == 10 and sum(map(sum, cap["grid"]["passed"])) == 7
    grp = rows["grp"]["prior"]
    # 8 triplets; the prior is right on (even, 0) and (odd, 1): 4/8. Hard: (0,1), (1,0),
    # (2,1), (3,0); the model misses (0,1) and (1,0): hard accuracy 2/4, overall 6/8.
    assert (grp["n"], grp["n_hard"], grp["hard_passed"]) == (8, 4, 2)
    assert grp["prior_accuracy"] == pytest.approx(0.5)
    assert grp["accuracy"] == pytest.approx(0.75)
    assert grp["linguistic_gap"] == pytest.approx(0.25)
    assert grp["hard_threshold_met"] is False and rows["grp"]["status"] == "failed"
    assert rows["grp"]["pass_rate"] == pytest.approx(0.5)
    img = rows["img"]["prior"]
    assert img["applicable"] is False and "image test" in img["reason"]
    result.stdout.fnmatch_lines(
        [
            "*relation/grp: 50.0% (2/4, *) >= 50.0% [[]m[]]; hard-test accuracy 50.0% < 60.0%*",
            "*linguistic prior (chance): prior accuracy 50.0% over 8; hard-test accuracy 50.0%"
            " (2/4 hard, 95% CI *); accuracy 75.0%, linguistic gap +25.0 pts*",
            "*hard_threshold: hard-test accuracy 50.0% < 60.0%, fails*",
        ]
    )
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(suite.path / "junit.xml").getroot().iter("testcase")
    }
    assert props["cap[m]"]["vlcheck_hard_accuracy"] == "0.4"
    assert props["cap[m]"]["vlcheck_prior_accuracy"] == "0.5"
    assert props["cap[m]"]["vlcheck_n_hard"] == "5"
    assert props["img[m]"]["vlcheck_prior"].startswith("chance: not applicable")
    markdown = (suite.path / "rep" / "matrix.md").read_text()
    assert "| m | chance | 50.0% | 5/10 | 40.0% |" in markdown
    html = (suite.path / "rep" / "report.html").read_text()
    assert html.count("by perplexity bin (seed 001, Figure 1)</figcaption>") == 2


def test_without_a_prior_the_hard_threshold_is_not_applied(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--vl-model=m=scores:model.jsonl", "--vl-report=rep")
    result.assert_outcomes(passed=3)
    rows = _rows(suite)
    assert rows["grp"]["prior"] == {
        "applicable": False,
        "priors": [],
        "reason": "hard_threshold not applied: no --vl-prior",
        "hard_threshold": 0.6,
    }
    assert "prior" not in rows["img"]
    failing = suite.runpytest("--vl-model=m=scores:model.jsonl", "--vl-threshold=0.99")
    failing.stdout.fnmatch_lines(["*linguistic prior (no prior): hard_threshold not applied*"])


def test_two_priors_average_perplexities_and_a_true_prior_leaves_nothing_hard(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest(
        "--vl-model=m=scores:model.jsonl",
        "--vl-prior=py:e2e_lm_priors:truth",
        "--vl-report=rep",
    )
    result.assert_outcomes(passed=3)
    cap = _rows(suite)["cap"]["prior"]
    assert cap["prior_accuracy"] == 1.0 and cap["n_hard"] == 0
    assert cap["hard_accuracy"] is None and cap["hard_threshold_met"] is None
    suite.runpytest(
        "--vl-model=m=scores:model.jsonl",
        "--vl-prior=py:e2e_lm_priors:truth",
        "--vl-prior=py:e2e_lm_priors:chance",
        "--vl-report=rep",
    )
    cap = _rows(suite)["cap"]["prior"]
    # even examples: both priors prefer the caption; odd ones: (e + e^2) / 2 on both
    # sides, a tie, which counts as wrong
    assert cap["priors"] == ["truth", "chance"] and cap["prior_accuracy"] == 0.5


def test_a_bad_prior_spec_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--vl-model=m=scores:model.jsonl", "--vl-prior=gpt2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vl-prior: prior spec 'gpt2' is not understood*"])


def test_an_unchanged_rerun_takes_the_prior_nlls_from_the_cache(suite: pytest.Pytester) -> None:
    """A prior with a known identity (here a declared fingerprint) is not even built when
    every NLL is cached, and the re-run reports the first run's numbers."""
    args = (
        "--vl-model=m=scores:model.jsonl",
        "--vl-prior=py:e2e_lm_priors:counted",
        "--vl-cache-dir=cache",
        "--vl-report=rep",
    )
    suite.runpytest(*args).assert_outcomes(passed=2, failed=1)
    calls = (suite.path / "prior_calls.log").read_text().splitlines()
    first = {test: row["prior"] for test, row in _rows(suite).items()}
    assert calls[0] == "load" and calls.count("load") == 1
    suite.runpytest(*args).assert_outcomes(passed=2, failed=1)
    assert (suite.path / "prior_calls.log").read_text().splitlines() == calls
    assert {test: row["prior"] for test, row in _rows(suite).items()} == first
    assert first["cap"]["hard_accuracy"] == pytest.approx(0.4)  # the `chance` numbers
    suite.runpytest(*args, "--vl-no-cache").assert_outcomes(passed=2, failed=1)
    assert (suite.path / "prior_calls.log").read_text().count("load") == 2
