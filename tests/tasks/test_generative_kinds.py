"""The kinds that ask a generative model (choice, answer, match with decide: yes_vs_no):
extraction and metrics by hand, then end to end through pytest with a generative ``py:``
scorer whose answers follow rules written in ``speaker_scorer.py``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.speaker_scorer import SOURCE as SPEAKER
from PIL import Image

from pytest_vlcheck.checklist import ChecklistError, load_checklist
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.metrics.answers import (
    answer_matches,
    extract_answer,
    extract_choice,
    first_number,
    normalize,
    rotation,
    yes_no_metrics,
)
from pytest_vlcheck.tasks import get_task
from pytest_vlcheck.tasks.asking import Reply
from pytest_vlcheck.tasks.choice import ChoiceExample
from pytest_vlcheck.tasks.match import MatchExample

IMG = ImageRef("file", "a.png", "/a.png")


# ---- extraction and metrics by hand ----------------------------------------------------------


def test_normal_form_and_numbers():
    assert normalize("The Two red cubes, 3.5 m.") == "2 red cubes 3.5 m"
    assert first_number("There are two squares.") == "2"
    assert first_number("I see 3.0 dogs and 4 cats") == "3"
    assert first_number("no idea") is None
    assert extract_answer("  Red. ", "exact") == "Red."
    assert extract_answer(" ", "normalized") is None
    assert answer_matches("2", ["two"], "number")
    assert answer_matches("it is red", ["Red"], "contains")
    assert not answer_matches("it is reddish", ["red"], "contains")
    assert answer_matches("red", ["The red."], "normalized")
    assert not answer_matches("Red.", ["red"], "exact")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("B", 1),
        ("(B) green", 1),
        ("C.", 2),
        ("D", None),  # no fourth option
        ("The green one", 1),  # the option's text
        ("red or green", None),  # two options named: never guessed
        ("I cannot tell", None),
        ("A", 0),
    ],
)
def test_a_choice_is_a_leading_letter_or_one_options_text(output: str, expected):
    assert extract_choice(output, ["red", "green", "blue"]) == expected


def test_pope_metrics_by_hand():
    # said yes: 1 1 0 0 1; labels: 1 0 1 0 1 -> TP 2, FP 1, FN 1, TN 1
    m = yes_no_metrics([True, True, False, False, True], [True, False, True, False, True])
    assert m == {
        "yes_ratio": 3 / 5,
        "precision": 2 / 3,
        "recall": 2 / 3,
        "f1": pytest.approx(2 / 3),
    }
    assert yes_no_metrics([False, False], [True, False]) == {"yes_ratio": 0.0, "recall": 0.0}


def test_rotations_show_every_option_at_every_position():
    assert [rotation(3, s) for s in range(3)] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]


def test_choice_letters_rotated_by_hand():
    """Two options, the right one (index 0) favoured only where it is shown first: right in
    the first order, wrong in the second; the example fails, accuracy at A is 1, at B 0."""
    task = get_task("choice")
    settings = {"scoring": "letter", "rotate": True, "prompt": "{question}\n{options}"}
    example = ChoiceExample("x", IMG, "Which?", ("red", "blue"), 0)
    asks = task.asks(settings, example)
    assert [a.prompt for a in asks] == ["Which?\nA. red\nB. blue", "Which?\nA. blue\nB. red"]
    replies = [[Reply("p0", (-1.0, -3.0)), Reply("p1", (-1.0, -3.0))]]
    judged = task.judge_replies(settings, [example], replies)
    assert judged.correct.tolist() == [False]
    assert judged.metrics == {
        "first_order_accuracy": 1.0,
        "accuracy_at_A": 1.0,
        "accuracy_at_B": 0.0,
    }
    # options in the example's order, one row per order: red shown at B in the second
    assert judged.grids[0].tolist() == [[-1.0, -3.0], [-3.0, -1.0]]
    assert judged.said[0] == {"prompts": ["p0", "p1"], "extracted": [0, 1]}
    assert judged.chance == pytest.approx(1 / 4)  # (1/2)^2


def test_choice_ties_fail_unless_first():
    task = get_task("choice")
    example = ChoiceExample("x", IMG, "Which?", ("red", "blue", "green"), 1)
    replies = [[Reply("p", (-1.0, -1.0, -2.0))]]
    strict = task.judge_replies({"scoring": "likelihood"}, [example], replies)
    assert (strict.correct.tolist(), strict.ties.tolist()) == ([False], [True])
    assert strict.said[0]["extracted"] is None
    lenient = task.judge_replies({"scoring": "likelihood", "ties": "first"}, [example], replies)
    assert lenient.correct.tolist() == [True]
    assert strict.chance == pytest.approx(1 / 3)


def test_yes_vs_no_by_hand():
    task = get_task("match")
    examples = [
        MatchExample("a", IMG, "a dog", True, question="Is there a dog?"),
        MatchExample("b", IMG, "a cat", False),
        MatchExample("c", IMG, "a cow", True),
        MatchExample("d", IMG, "a pig", False),
    ]
    assert task.asks({"decide": "yes_vs_no"}, examples[0])[0].prompt == "Is there a dog?"
    assert task.asks({"decide": "yes_vs_no"}, examples[1])[0].prompt == (
        'Does this figure show "a cat"? Please answer yes or no.'
    )
    replies = [  # (log P(Yes), log P(No)): yes, yes, no, a tie
        [Reply("a", (-0.1, -2.0))],
        [Reply("b", (-0.5, -0.9))],
        [Reply("c", (-3.0, -0.2))],
        [Reply("d", (-1.0, -1.0))],
    ]
    judged = task.judge_replies({"decide": "yes_vs_no"}, examples, replies)
    assert judged.correct.tolist() == [True, False, False, False]
    assert judged.ties.tolist() == [False, False, False, True]
    # said yes: a, b -> TP 1 (a), FP 1 (b), FN 1 (c); the tie is no answer (not yes)
    assert judged.metrics["yes_ratio"] == 0.5
    assert judged.metrics["precision"] == 0.5 and judged.metrics["recall"] == 0.5
    assert judged.metrics["f1"] == pytest.approx(0.5)
    assert judged.metrics["positive_accuracy"] == 0.5
    assert [s["extracted"] for s in judged.said] == ["yes", "yes", "no", None]


# ---- end to end through pytest ----------------------------------------------------------------

CHECKLIST = """\
vlcheck: 1
tests:
  - id: likelihood
    capability: attribute/color
    task: choice
    threshold: 0.5
    examples:
      - {id: r, image: red.png, question: What colour is it?, options: [green, red, blue], answer: 1}
      - {id: b, image: blue.png, question: What colour is it?, options: [blue, red], answer: 1}
  - id: letters
    capability: attribute/color
    task: choice
    scoring: letter
    rotate: true
    threshold: 0.5
    examples:
      - {id: r, image: red.png, question: What colour?, options: [red, green, blue], answer: 0}
      - {id: g, image: green.png, question: Which?, options: [red, blue], answer: 0}
  - id: generated
    capability: attribute/color
    task: choice
    scoring: generate
    threshold: 0.5
    examples:
      - {id: r, image: red.png, question: What colour?, options: [green, red], answer: 1}
      - {id: m, image: red.png, question: mumble, options: [green, red], answer: 1}
  - id: count
    capability: object/counting
    task: answer
    compare: number
    max_new_tokens: 4
    threshold: 0.5
    examples:
      - {id: two, image: red.png, question: How many squares?, answers: ["2"]}
      - {id: m, image: red.png, question: How many? mumble, answers: ["2"]}
  - id: colour
    capability: attribute/color
    task: answer
    compare: contains
    threshold: 0.5
    examples:
      - {id: b, image: blue.png, question: What colour is it?, answers: [blue, navy]}
  - id: pope
    capability: object/existence
    task: match
    decide: yes_vs_no
    threshold: 0.5
    examples:
      - {id: y, image: red.png, caption: red, question: Is the square red?, label: match}
      - {id: n, image: red.png, caption: dog, question: Is there a dog?, label: no_match}
      - {id: c, image: blue.png, caption: a blue square, label: match}
      - {id: w, image: green.png, caption: a red square, label: match}
"""


def _write(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(speaker=SPEAKER)
    pytester.makefile(".yaml", asks=CHECKLIST)
    for name, colour in {
        "red": (220, 20, 20),
        "green": (20, 200, 20),
        "blue": (20, 20, 220),
    }.items():
        Image.new("RGB", (24, 24), colour).save(pytester.path / f"{name}.png")


def test_every_asking_kind_end_to_end(pytester: pytest.Pytester) -> None:
    _write(pytester)
    result = pytester.runpytest(
        "asks.yaml", "--vl-model=py:speaker:make", "--vl-report=out",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    out = pytester.path / "out"
    rows = {r["test"]: r for r in json.loads((out / "matrix.json").read_text())["results"]}
    passed = {test: (row["passed"], row["n"]) for test, row in rows.items()}
    assert passed == {
        "likelihood": (1, 2),  # the blue square's answer is written as 'red': it fails
        "letters": (1, 2),  # green is not among [red, blue]: the A bias decides each order
        "generated": (1, 2),  # 'hmm' is unparseable
        "count": (1, 2),
        "colour": (1, 1),
        "pope": (3, 4),  # 'a red square' on green: no
    }
    assert rows["letters"]["metrics"] == {
        "first_order_accuracy": 1.0,
        "accuracy_at_A": 1.0,  # r at A, g at A
        "accuracy_at_B": 0.5,  # r at B (right), g at B (wrong)
        "accuracy_at_C": 1.0,
    }
    assert rows["letters"]["chance"] == pytest.approx((1 / 27 + 1 / 4) / 2)
    assert rows["generated"]["metrics"]["unparseable"] == 1.0
    assert rows["count"]["metrics"]["unparseable"] == 1.0 and rows["count"]["chance"] is None
    pope = rows["pope"]["metrics"]
    assert (pope["yes_ratio"], pope["precision"], pope["recall"]) == (0.5, 1.0, 2 / 3)
    assert pope["f1"] == pytest.approx(0.8)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    by_id = {(s["test"], s["example"]): s for s in samples}
    assert by_id["likelihood", "r"]["scores"] == [[-2.5, 0.0, pytest.approx(-2.4)]]
    assert by_id["likelihood", "r"]["prompt"] == "USER: What colour is it? ASSISTANT:"
    assert by_id["likelihood", "r"]["texts"] == ["green", "red", "blue"]
    assert by_id["likelihood", "r"]["images"] == ["red.png"]
    assert by_id["likelihood", "r"]["extracted"] == 1
    letters = by_id["letters", "g"]
    assert len(letters["prompts"]) == 2 and letters["extracted"] == [0, 1]
    assert letters["scores"] == [[-1.0, -3.0], [-3.0, -1.0]]
    assert by_id["generated", "r"]["output"] == "(B) red"
    assert by_id["generated", "m"]["extracted"] is None
    assert by_id["count", "two"]["output"] == "There are two squares."  # 4 tokens at most
    assert by_id["count", "two"]["extracted"] == "2"
    assert by_id["pope", "w"]["extracted"] == "no"
    assert "output" not in by_id["pope", "w"]
    (failure,) = rows["generated"]["failures"]
    assert failure["said"]["output"] == "hmm" and "unparseable" in failure["detail"]
    result.assert_outcomes(passed=6)


def test_a_grid_kind_on_a_scorer_that_only_answers_is_one_line(pytester: pytest.Pytester):
    _write(pytester)
    pytester.makefile(
        ".yaml",
        grid=textwrap.dedent(
            """
            vlcheck: 1
            tests:
              - id: grid
                capability: attribute/color
                task: caption
                threshold: 0.5
                examples: [{image: red.png, caption: red, negatives: [blue]}]
            """
        ),
    )
    result = pytester.runpytest("grid.yaml", "--vl-model=py:speaker:make", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*model 'py:speaker:make' has no score_pairs: it only answers*"])
    assert "Traceback" not in result.stdout.str()


def test_an_embedding_model_is_refused_once_per_asking_item(pytester: pytest.Pytester):
    _write(pytester)
    from helpers.colour_scorer import SOURCE as COLOUR

    pytester.makepyfile(colour=COLOUR)
    result = pytester.runpytest("asks.yaml", "--vl-model=py:colour:make", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=6)
    result.stdout.fnmatch_lines(
        [
            "*asks.yaml:3: test 'likelihood': a choice test asks a generative model to answer; "
            "model 'py:colour:make' has no score_continuations, next_token_logprobs, generate*",
            "*asks.yaml:*: test 'count': an answer test asks a generative model*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


CHOICE = "{image: a.png, question: q, options: [red, blue], answer: 0}"
BAD_TESTS = {
    "one option": (
        "task: choice",
        "{image: a.png, question: q, options: [red], answer: 0}",
        "'options' has 1 items; expected at least 2",
    ),
    "answer out of range": (
        "task: choice",
        "{image: a.png, question: q, options: [red, blue], answer: 2}",
        "'answer' is 2; expected a whole number 0-1",
    ),
    "empty answers": (
        "task: answer",
        "{image: a.png, question: q, answers: []}",
        "'answers' has 0 items; expected at least 1",
    ),
    "rotate on caption": (
        "task: caption\n    rotate: true",
        "{image: a.png, caption: red, negatives: [blue]}",
        "'rotate' applies to choice tests only, not 'caption'",
    ),
    "rotate with likelihood": (
        "task: choice\n    rotate: true",
        CHOICE,
        "'rotate' needs scoring: letter or generate",
    ),
    "cutoff with yes_vs_no": (
        "task: match\n    decide: yes_vs_no\n    cutoff: 0.3",
        "{image: a.png, caption: red, label: match}",
        "'cutoff' is not used with decide: yes_vs_no",
    ),
    "prompt without options": (
        "task: choice\n    scoring: letter\n    prompt: '{question}?'",
        CHOICE,
        "'prompt' has 0 '{options}'; expected exactly one",
    ),
    "ties with generate": (
        "task: choice\n    scoring: generate\n    ties: first",
        CHOICE,
        "'ties' is for scored options",
    ),
    "unknown compare": (
        "task: answer\n    compare: fuzzy",
        "{image: a.png, question: q, answers: [red]}",
        "'compare' is 'fuzzy'",
    ),
}


@pytest.mark.parametrize("case", BAD_TESTS)
def test_bad_input_is_one_line_at_its_place(tmp_path: Path, case: str):
    settings, example, message = BAD_TESTS[case]
    text = (
        "vlcheck: 1\ntests:\n  - id: t\n    capability: a/b\n    threshold: 0.5\n"
        f"    {settings}\n    examples:\n      - {example}\n"
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    with pytest.raises(ChecklistError) as info:
        load_checklist(path)
    assert f"{path}:" in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value).strip()
