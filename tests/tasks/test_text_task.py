"""The ``text`` kind: anchor, positive and negatives compared by text embeddings only.

Hand-computed from the definition: s(anchor, positive) must beat s(anchor, negative) for
every negative, and with ``symmetric: true`` also s(positive, negative) (SugarCrepe++ TOT).
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from pytest_vlcheck.tasks import get_task

TEXT = get_task("text")


def _grid(anchor_positive: float, anchor_negatives: list, positive_negatives: list) -> np.ndarray:
    """A symmetric texts x texts grid in the order anchor, positive, negatives."""
    n = 2 + len(anchor_negatives)
    grid = np.eye(n, dtype=np.float32)
    grid[0, 1] = grid[1, 0] = anchor_positive
    for j, (a, p) in enumerate(zip(anchor_negatives, positive_negatives, strict=True), start=2):
        grid[0, j] = grid[j, 0] = a
        grid[1, j] = grid[j, 1] = p
    return grid


GRIDS = [
    _grid(0.8, [0.6], [0.96]),  # wins as anchor; loses as positive (0.96 > 0.8)
    _grid(0.7, [0.2, 0.3], [0.1, 0.4]),  # wins both ways
    _grid(0.5, [0.5], [0.1]),  # an exact tie as anchor
    _grid(0.4, [0.9], [0.1]),  # loses as anchor
]


@pytest.mark.parametrize(
    ("settings", "correct", "ties", "chance"),
    [
        ({}, [True, True, False, False], [False, False, True, False], (1 / 2 + 1 / 3) / 2),
        ({"symmetric": True}, [False, True, False, False], [False, False, True, False], None),
        ({"ties": "first"}, [True, True, True, False], [False, False, True, False], None),
    ],
)
def test_judgement_by_hand(settings: dict, correct: list, ties: list, chance: float) -> None:
    judgement = TEXT.judge(settings, [None] * len(GRIDS), GRIDS, None)
    assert judgement.correct.tolist() == correct
    assert judgement.ties.tolist() == ties
    if chance is not None:
        # 1/(k+1) per example: k = 1, 2, 1, 1 -> (1/2 + 1/3 + 1/2 + 1/2) / 4
        assert judgement.chance == pytest.approx((3 / 2 + 1 / 3) / 4)


def test_symmetric_chance_is_one_over_2k_plus_1() -> None:
    # the one anchor-positive score must be the largest of 2k + 1 independent scores
    assert TEXT.chance({"symmetric": True}, [(0, 3), (0, 4)]) == pytest.approx((1 / 3 + 1 / 5) / 2)
    assert TEXT.chance({}, [(0, 3), (0, 4)]) == pytest.approx((1 / 2 + 1 / 3) / 2)


# Unit vectors with cosines worked out by hand: anchor . positive and the rest below.
SCORER = """
import numpy as np

VECTORS = {
    "a dog on a mat": (1.0, 0.0, 0.0),
    "a dog lying on a mat": (0.8, 0.6, 0.0),
    "a mat on a dog": (0.6, 0.8, 0.0),
    "a red cup": (0.0, 0.0, 1.0),
    "a cup that is red": (0.6, 0.0, 0.8),
    "a blue cup": (0.6, 0.0, -0.8),
}


class WordScorer:
    fingerprint = "words-v1"

    def encode_images(self, images):
        raise AssertionError("a text-to-text test must load no image")

    def encode_texts(self, texts):
        return np.asarray([VECTORS[t] for t in texts], dtype=np.float32)


def make():
    return WordScorer()
"""

CHECKLIST = """
vlcheck: 1
tests:
  - id: one-way
    capability: relation/paraphrase
    task: text
    threshold: 0.5
    examples: &examples
      - id: dog
        anchor: a dog on a mat
        positive: a dog lying on a mat
        negatives: [a mat on a dog]
      - id: cup
        anchor: a red cup
        positive: a cup that is red
        negatives: [a blue cup]
  - id: both-ways
    capability: relation/paraphrase
    task: text
    symmetric: true
    threshold: 0.5
    examples: *examples
"""


def _write(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(word_scorer=SCORER)
    pytester.makefile(".yaml", texts=CHECKLIST)


def test_text_tests_end_to_end(pytester: pytest.Pytester) -> None:
    _write(pytester)
    result = pytester.runpytest(
        "texts.yaml", "--vl-model=py:word_scorer:make", "--vl-report=out", "-p", "no:cacheprovider"
    )
    rows = {
        r["test"]: r
        for r in json.loads((pytester.path / "out" / "matrix.json").read_text())["results"]
    }
    # dog: s(a, p) = 0.8 > s(a, n) = 0.6, but s(p, n) = 0.48 + 0.48 = 0.96 > 0.8.
    # cup: s(a, p) = 0.8 > s(a, n) = -0.8 and s(p, n) = 0.36 - 0.64 = -0.28.
    assert (rows["one-way"]["passed"], rows["one-way"]["n"]) == (2, 2)
    assert (rows["both-ways"]["passed"], rows["both-ways"]["n"]) == (1, 2)
    assert rows["one-way"]["chance"] == pytest.approx(1 / 2)
    assert rows["both-ways"]["chance"] == pytest.approx(1 / 3)
    (dog,) = rows["both-ways"]["failures"]
    assert dog["id"] == "dog" and dog["images"] == []
    scores = np.asarray(dog["scores"], dtype=np.float32)
    assert scores.shape == (3, 3) and (scores == scores.T).all()
    assert scores[1, 2] == pytest.approx(0.96)
    result.assert_outcomes(passed=2)


def test_a_model_without_text_embeddings_is_one_line(pytester: pytest.Pytester) -> None:
    _write(pytester)
    pytester.makepyfile(
        pairs_only="""
        import numpy as np

        class Pairs:
            def score_pairs(self, images, texts):
                return np.zeros(len(texts), dtype=np.float32)

        def make():
            return Pairs()
        """
    )
    result = pytester.runpytest(
        "texts.yaml", "--vl-model=py:pairs_only:make", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*texts.yaml:3: test 'one-way': a text test compares texts with texts; model "
            "'py:pairs_only:make' scores pairs only (score_pairs), so it has no text "
            "embeddings; expected a dual encoder*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_score_file_cannot_serve_a_text_test(pytester: pytest.Pytester) -> None:
    _write(pytester)
    scores = pytester.path / "scores.jsonl"
    scores.write_text(json.dumps({"image": "x.png", "text": "a red cup", "score": 0.1}) + "\n")
    result = pytester.runpytest(
        "texts.yaml", f"--vl-model=scores:{scores}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*test 'both-ways': a text test compares texts*looks scores up*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    symmetric: yes please\n", "'symmetric' must be true or false, got a string"),
        ("    generate: {n: 2}\n", "text tests cannot be generated from scenes"),
    ],
)
def test_bad_text_settings_are_collection_errors(
    pytester: pytest.Pytester, extra: str, message: str
) -> None:
    pytester.makefile(
        ".yaml",
        bad=textwrap.dedent(
            """
            vlcheck: 1
            tests:
              - id: t
                capability: relation/paraphrase
                task: text
            """
        )
        + extra
        + "    examples: [{anchor: a, positive: b, negatives: [c]}]\n" * ("generate" not in extra),
    )
    result = pytester.runpytest("bad.yaml", "--vl-model=tiny", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*bad.yaml:*{message}*"])
    assert "Traceback" not in result.stdout.str()
