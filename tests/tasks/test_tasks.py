"""Task kinds: the registry, and each kind's judgement (outcomes, ties, chance) by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.tasks import TASK_NAMES, get_task
from pytest_vlcheck.tasks.caption.example import CaptionExample
from pytest_vlcheck.tasks.group import GroupExample
from pytest_vlcheck.tasks.image import ImageExample
from pytest_vlcheck.tasks.match import MatchExample

IMG = ImageRef("file", "a.png", "/a.png")
IMG2 = ImageRef("file", "b.png", "/b.png")


class Probabilities:
    """A score scale whose values are already probabilities."""

    def match_scores(self, scores):
        return scores, "probability"


def test_registry_knows_every_kind() -> None:
    assert TASK_NAMES == (
        "caption",
        "image",
        "group",
        "match",
        "invariance",
        "directional",
        "text",
        "choice",
        "answer",
    )
    with pytest.raises(ValueError, match="unknown task kind 'nope'"):
        get_task("nope")


def test_caption_ties_fail_and_are_counted() -> None:
    task = get_task("caption")
    example = CaptionExample("x", IMG, ("a red circle",), ("a blue circle", "a red square"))
    grids = [
        np.array([[0.30, 0.20, 0.10]], dtype=np.float32),  # wins
        np.array([[0.30, 0.30, 0.10]], dtype=np.float32),  # tie with the best negative: lost
        np.array([[0.30, 0.40, 0.10]], dtype=np.float32),  # lost outright
        np.array([[np.nan, 0.1, 0.1]], dtype=np.float32),  # NaN: lost, not a tie
    ]
    judged = task.judge({}, [example] * 4, grids, Probabilities())
    assert judged.correct.tolist() == [True, False, False, False]
    assert judged.ties.tolist() == [False, True, False, False]
    assert judged.chance == pytest.approx(1 / 3)


def test_caption_ties_first_gives_the_tie_to_the_true_caption() -> None:
    task = get_task("caption")
    example = CaptionExample("x", IMG, ("a red circle",), ("a blue circle", "a red square"))
    grids = [
        np.array([[0.30, 0.30, 0.30]], dtype=np.float32),  # all tied: the first (true) wins
        np.array([[0.30, 0.40, 0.30]], dtype=np.float32),  # lost outright
        np.array([[0.30, 0.20, 0.10]], dtype=np.float32),  # won outright
    ]
    first = task.judge({"ties": "first"}, [example] * 3, grids, Probabilities())
    assert first.correct.tolist() == [True, False, True]
    assert first.ties.tolist() == [True, False, False]  # still counted: a tie decided it
    last = task.judge({"ties": "last"}, [example] * 3, grids, Probabilities())
    assert last.correct.tolist() == [False, False, True]
    assert last.ties.tolist() == [True, False, False]


def test_caption_ties_order_reads_the_true_captions_position() -> None:
    task = get_task("caption")
    negatives = ("a blue circle", "a red square")
    grid = np.array([[0.30, 0.30, 0.30]], dtype=np.float32)  # all tied
    examples = [
        CaptionExample(str(p), IMG, ("a red circle",), negatives, position=p) for p in range(3)
    ]
    judged = task.judge({"ties": "order"}, examples, [grid] * 3, Probabilities())
    # the first column of the tie wins: the true caption only where it stands first
    assert judged.correct.tolist() == [True, False, False]
    assert judged.ties.tolist() == [True, True, True]


def test_image_ties_order_reads_the_true_images_position() -> None:
    task = get_task("image")
    grid = np.array([[0.3], [0.3], [0.1]], dtype=np.float32)  # the true image ties the first
    examples = [ImageExample(str(p), ("t",), IMG, (IMG2, IMG2), position=p) for p in range(3)]
    judged = task.judge({"ties": "order"}, examples, [grid] * 3, Probabilities())
    # argmax over the source's order: the true image wins only when it stands before the tie
    assert judged.correct.tolist() == [True, False, False]


def test_image_task_ties_first_on_the_prompt_mean() -> None:
    task = get_task("image")
    example = ImageExample("x", ("p1", "p2"), IMG, (IMG2,))
    grid = np.array([[0.2, 0.4], [0.3, 0.3]], dtype=np.float32)  # means tie at 0.3
    judged = task.judge({"ties": "first"}, [example], [grid], Probabilities())
    assert judged.correct.tolist() == [True] and judged.ties.tolist() == [True]


def test_caption_with_several_true_captions_needs_every_one_above_every_negative() -> None:
    task = get_task("caption")
    example = CaptionExample("x", IMG, ("a red circle", "a circle, red"), ("a blue circle",))
    grids = [
        np.array([[0.40, 0.35, 0.30]], dtype=np.float32),  # both true above the negative
        np.array([[0.40, 0.25, 0.30]], dtype=np.float32),  # the second true one is below
        np.array([[0.40, 0.30, 0.30]], dtype=np.float32),  # the second ties the negative
        np.array([[0.30, 0.30, 0.20]], dtype=np.float32),  # the true ones tie each other: fine
    ]
    fail = task.judge({}, [example] * 4, grids, Probabilities())
    assert fail.correct.tolist() == [True, False, False, True]
    assert fail.ties.tolist() == [False, False, True, False]
    first = task.judge({"ties": "first"}, [example] * 4, grids, Probabilities())
    assert first.correct.tolist() == [True, False, True, True]
    assert fail.chance == pytest.approx(1 / 3)  # 2 true of 3 texts: 1 / C(3, 2)
    assert task.text_choices(example) == [
        ("a red circle", ("a blue circle",)),
        ("a circle, red", ("a blue circle",)),
    ]
    assert "(first 2 are true)" in task.describe_failure(example, grids[1])


def test_image_task_judges_the_prompt_mean() -> None:
    task = get_task("image")
    example = ImageExample("x", ("p1", "p2"), IMG, (IMG2,))
    # true image: mean(0.2, 0.4) = 0.3; distractor: mean(0.3, 0.3) = 0.3 -> a tie
    grid = np.array([[0.2, 0.4], [0.3, 0.3]], dtype=np.float32)
    judged = task.judge({}, [example], [grid], Probabilities())
    assert judged.correct.tolist() == [False] and judged.ties.tolist() == [True]
    assert judged.chance == 0.5


def test_group_criterion_and_ties() -> None:
    task = get_task("group")
    example = GroupExample("x", (IMG, IMG2), ("c0", "c1"))
    text_right = np.array([[0.5, 0.4], [0.6, 0.7]], dtype=np.float32)  # image score fails
    tied = np.array([[0.5, 0.5], [0.1, 0.7]], dtype=np.float32)  # image 0 ties its captions
    judged = task.judge({"criterion": "text"}, [example] * 2, [text_right, tied], Probabilities())
    assert judged.correct.tolist() == [True, False]
    assert judged.ties.tolist() == [False, True]
    assert judged.chance == 0.25
    # image score: the first grid fails (0.5 < 0.6), the tied one passes both comparisons
    assert judged.metrics["text_score"] == 0.5 and judged.metrics["image_score"] == 0.5
    group = task.judge({"criterion": "group"}, [example], [text_right], Probabilities())
    assert group.correct.tolist() == [False] and group.chance == pytest.approx(1 / 6)


def test_match_tie_is_a_non_match_scored_at_the_cutoff() -> None:
    task = get_task("match")
    positive = MatchExample("p", IMG, "c", True, ("verb",))
    negative = MatchExample("n", IMG, "c", False, ("verb", "subject"))
    grids = [np.array([[0.5]], dtype=np.float32), np.array([[0.5]], dtype=np.float32)]
    judged = task.judge({"cutoff": 0.5}, [positive, negative], grids, Probabilities())
    assert judged.correct.tolist() == [True, False]
    assert judged.ties.tolist() == [False, True]
    assert judged.metrics["neg_type=subject/negative_accuracy"] == 0.0
    assert judged.metrics["neg_type=verb/average_accuracy"] == 0.5
    assert judged.score_kind == "probability"


def test_chance_from_raw_examples_matches_typed_examples() -> None:
    caption = get_task("caption")
    shapes = [
        caption.raw_grid_shape({"negatives": ["a"]}),
        caption.raw_grid_shape({"negatives": ["a", "b", "c"]}),
    ]
    assert caption.chance({}, shapes) == pytest.approx((1 / 2 + 1 / 4) / 2)
    several = caption.raw_grid_shape({"captions": ["x", "y"], "negatives": ["a", "b"]})
    assert caption.chance({}, [several]) == pytest.approx(1 / 6)  # 1 / C(4, 2)
