"""``match``: one image, one caption and a label (match / no match): binary image-text matching.

A match needs score >= cutoff, a non-match score < cutoff (SVO-Probes, VL-CheckList's ITM).
Reports positive, negative and average accuracy, overall and per negative type; chance 1/2.
CLIP-like dual encoders give cosine similarities, so their tests set ``cutoff`` to a
similarity; scorers with a probability (SigLIP's sigmoid, ITM heads, score files) use 0.5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vlcheck import metrics
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.asking import Ask, Reply
from pytest_vlcheck.tasks.base import BaseTask, image_cluster
from pytest_vlcheck.tasks.match_decide import DECIDES, describe_yes_no, judge_yes_no, yes_no_ask
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks

DEFAULT_CUTOFF = 0.5
_LABELS = {"match": True, "no_match": False, True: True, False: False}


@dataclass(frozen=True)
class MatchExample:
    """One image-caption pair with a match / no-match label (binary ITM).

    ``neg_types`` names the negative types the pair counts in (SVO-Probes: subject, verb,
    object); a positive pair that appears with several negatives carries each of them.
    """

    id: str
    image: ImageRef
    caption: str
    label: bool
    neg_types: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0
    question: str | None = None
    """Asked verbatim under ``decide: yes_vs_no`` (``tasks.match_decide``)."""


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "image": {"$ref": "#/$defs/image"},
        "caption": {"type": "string"},
        "label": {"enum": ["match", "no_match", True, False]},
        "neg_type": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ],
            "description": "negative type(s), e.g. subject, verb, object",
        },
        "question": {
            "type": "string",
            "minLength": 1,
            "description": "decide: yes_vs_no: the yes/no question asked verbatim",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["image", "caption", "label"],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class MatchTask(BaseTask):
    """A yes/no decision per pair against a cut-off."""

    name = "match"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("image", "caption", "label")
    optional_example_keys = ("neg_type", "question")
    setting_keys = ("cutoff", "decide")
    generation = GenerationRules(asks="yes_no")

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``cutoff``: the decision threshold (default 0.5, for probabilities). No scorer gives
        a score outside [-1, 1] (cosine similarities; probabilities lie in [0, 1]), so a
        cut-off outside it would judge every pair alike: an error when the file loads.
        ``decide``: ``cutoff`` (the default) or ``yes_vs_no`` (the model's own decision,
        which takes no cut-off)."""
        decide = fields.choice("decide", DECIDES, "cutoff")
        if decide == "yes_vs_no" and fields.has("cutoff"):
            fields.fail("'cutoff' is not used with decide: yes_vs_no (P(Yes) > P(No))", "cutoff")
        return {
            "decide": decide,
            "cutoff": fields.number(
                "cutoff",
                DEFAULT_CUTOFF,
                low=-1.0,
                high=1.0,
                expected="a number from -1 to 1 (a cosine similarity; from 0 to 1 for a "
                "model that gives probabilities)",
            ),
        }

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> MatchExample:
        """``image``, ``caption``, ``label`` and an optional ``neg_type`` (text or list)."""
        image = image_at(context, fields, "image")
        label = fields.raw("label")
        if not isinstance(label, (str, bool)) or label not in _LABELS:
            fields.fail(f"'label' is {label!r}; expected match or no_match", "label")
        neg_types: tuple[str, ...] = ()
        if fields.has("neg_type"):
            if isinstance(fields.raw("neg_type"), list):
                neg_types = fields.strings("neg_type")
            else:
                neg_types = (fields.text("neg_type"),)
        caption = fields.text("caption")
        question = fields.text("question") if fields.has("question") else None
        label_value = _LABELS[label]
        return MatchExample(
            example_id, image, caption, label_value, neg_types, tags, line, question
        )

    def grid(self, example: MatchExample) -> Grid:
        """One image x one caption."""
        return (example.image,), (example.caption,)

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """Always 1 x 1."""
        return 1, 1

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """A coin flip."""
        return metrics.MATCH_CHANCE

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[MatchExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """Each pair against the cut-off; a non-match scored exactly at it is a tie."""
        asked = next((e for e in examples if e.question is not None), None)
        if asked is not None:
            raise VlcheckUserError(
                f"example {asked.id!r} (line {asked.line}) has a 'question', which only "
                "decide: yes_vs_no asks; expected decide: yes_vs_no or no question"
            )
        cutoff = settings.get("cutoff", DEFAULT_CUTOFF)
        values, kind = scale.match_scores(np.array([g[0, 0] for g in grids], dtype=np.float32))
        if kind == "probability" and cutoff < 0:
            raise VlcheckUserError(
                f"'cutoff' is {cutoff:g}, but this model gives probabilities, which every "
                "pair would reach; expected a cutoff from 0 to 1 for it (a negative cut-off "
                "is for cosine similarities)"
            )
        labels = np.array([e.label for e in examples], dtype=bool)
        correct = metrics.match_correct(values, labels, cutoff)
        ties = ~correct & (np.asarray(values, dtype=np.float32) == np.float32(cutoff))
        extra = metrics.match_accuracies(correct, labels, [e.neg_types for e in examples])
        return Judgement(correct, ties, extra, metrics.MATCH_CHANCE, kind)

    def asks_model(self, settings: Mapping[str, Any]) -> bool:
        """``decide: yes_vs_no`` asks the model."""
        return settings.get("decide") == "yes_vs_no"

    def asks(self, settings: Mapping[str, Any], example: MatchExample) -> list[Ask]:
        """P(Yes) and P(No) after the question."""
        return [yes_no_ask(example)]

    def judge_replies(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[MatchExample],
        replies: Sequence[list[Reply]],
    ) -> Judgement:
        """The model's decisions against the labels (``match_decide.judge_yes_no``)."""
        return judge_yes_no(examples, replies)

    def describe_reply(self, example: MatchExample, said: Mapping[str, Any]) -> str:
        """The question, the label and the model's answer."""
        return describe_yes_no(example, said)

    def describe_failure(self, example: MatchExample, grid: np.ndarray) -> str:
        """The pair, its score and its label."""
        label = "match" if example.label else "no match"
        return (
            f"{example.image.describe()} / {example.caption!r}: score {grid[0, 0]:.4f}, "
            f"label {label}"
        )

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The label is in the failure's detail line only."""
        return set(), set(), set()

    def rows(self, example: MatchExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The pair under its label."""
        types = "+".join(example.neg_types) or "untyped"
        label = "match" if example.label else f"no_match ({types})"
        return [(label, [example.caption], [example.image])]

    def cluster_key(self, example: MatchExample) -> str:
        """The image the caption is matched with."""
        return image_cluster(example.image)

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The true pair, then each other member's caption on the true scene. With questions
        (``decide: yes_vs_no``): the truth's question answered as the generate block says
        (``Yes``: match), each other member's question on the true scene the other way."""
        truth = candidates.truth
        scene = candidates.scenes[truth]
        tags = dict(candidates.tags)
        asked = bool(candidates.questions)
        yes = not asked or candidates.answers[truth][0] == "Yes"

        def pair(member: int, label: bool) -> dict[str, Any]:
            out: dict[str, Any] = {
                "image": {"scene": scene},
                "caption": candidates.captions[member] or candidates.questions[member],
                "label": "match" if label else "no_match",
            }
            if asked:
                out["question"] = candidates.questions[member]
            return out

        out: list[dict[str, Any]] = [{"id": f"{candidates.example_id}.0", **pair(truth, yes)}]
        for j, other in enumerate(candidates.others, start=1):
            example = {"id": f"{candidates.example_id}.{j}", **pair(other, not yes)}
            example["neg_type"] = candidates.neg_names[other] or candidates.neg_names[truth]
            out.append(example)
        for example in out:
            example["tags"] = tags
        return out

    def verdict_notes(self, score_kind: str) -> list[str]:
        """Which kind of score the cut-off judged."""
        return [f"scores are {score_kind} values"]


MATCH = MatchTask()
