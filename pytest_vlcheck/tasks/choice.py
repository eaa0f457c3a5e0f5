"""``choice``: one image, a question, its options and the index of the right one, asked of a
generative model (MMVP, VisMin, MMBench-style multiple choice).

``scoring: likelihood`` (the default) scores each option's text as the continuation of the
question alone (lm-eval's ``acc``: the summed log-probability of its tokens); ``letter``
shows the options lettered (``prompt``, overridable) and compares the log-probability of each
letter as the answer; ``generate`` shows them the same way, generates greedily and extracts a
letter or an option's text (``metrics.answers.extract_choice``; an answer that cannot be
parsed is wrong and counted in ``unparseable``). ``rotate: true`` (letter, generate) asks
every cyclic order of the options: the example passes only when every order is answered
right, and the accuracy per position of the right option is the order bias. Chance is 1/k,
(1/k)^k rotated. ``ties`` as for caption (likelihood, letter): ``fail`` or ``first``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_vlcheck import metrics
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.metrics.answers import LETTERS, extract_choice, rotation
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.asking import (
    Ask,
    Reply,
    fill_prompt,
    parse_max_new_tokens,
    parse_prompt,
)
from pytest_vlcheck.tasks.asking_base import AskingBaseTask
from pytest_vlcheck.tasks.base import scored_texts
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, TrueMarks

SCORINGS = ("likelihood", "letter", "generate")
CHOICE_TIES = ("fail", "first")
LETTERED_PROMPT = (
    "{question}\n{options}\nAnswer with the option's letter from the given choices directly."
)
QUESTION_PROMPT = "{question}"
MAX_NEW_TOKENS = 8
GENERATED_QUESTION = "Which caption describes the image?"

EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "image": {"$ref": "#/$defs/image"},
        "question": {"type": "string", "minLength": 1},
        "options": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 2},
        "answer": {"type": "integer", "minimum": 0, "description": "0-based index into options"},
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["image", "question", "options", "answer"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class ChoiceExample:
    """A multiple-choice question about one image; ``answer`` indexes ``options``."""

    id: str
    image: ImageRef
    question: str
    options: tuple[str, ...]
    answer: int
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


def lettered(options: Sequence[str]) -> str:
    """``A. red`` / ``B. green`` lines, in the order shown."""
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


class ChoiceTask(AskingBaseTask):
    """Multiple choice asked of a generative model."""

    name = "choice"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("image", "question", "options", "answer")
    setting_keys = ("scoring", "rotate", "prompt", "max_new_tokens", "ties")
    generation = GenerationRules(asks="option")

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``scoring``, ``rotate`` (not with likelihood), ``prompt``, ``max_new_tokens``
        (generate only) and ``ties`` (not with generate)."""
        scoring = fields.choice("scoring", SCORINGS, "likelihood")
        rotate = fields.flag("rotate", False)
        if rotate and scoring == "likelihood":
            fields.fail(
                "'rotate' needs scoring: letter or generate; with likelihood the options are "
                "scored one by one and their order plays no part",
                "rotate",
            )
        if fields.has("max_new_tokens") and scoring != "generate":
            fields.fail("'max_new_tokens' is for scoring: generate", "max_new_tokens")
        if fields.has("ties") and scoring == "generate":
            fields.fail("'ties' is for scored options; scoring: generate has no ties", "ties")
        lettered_form = scoring != "likelihood"
        default = LETTERED_PROMPT if lettered_form else QUESTION_PROMPT
        return {
            "scoring": scoring,
            "rotate": rotate,
            "prompt": parse_prompt(fields, default, options=lettered_form),
            "max_new_tokens": parse_max_new_tokens(fields, MAX_NEW_TOKENS),
            "ties": fields.choice("ties", CHOICE_TIES, "fail"),
        }

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> ChoiceExample:
        """``image``, ``question``, ``options`` (2+, at most 26) and ``answer`` (an index)."""
        image = image_at(context, fields, "image")
        options = fields.strings("options", min_items=2)
        if len(options) > len(LETTERS):
            fields.fail(f"'options' has {len(options)} items; expected at most 26", "options")
        answer = fields.number("answer", low=0, high=len(options) - 1,
                               expected=f"a whole number 0-{len(options) - 1} (an index into "
                               f"the {len(options)} options)")  # fmt: skip
        if answer != int(answer):
            fields.fail(f"'answer' is {answer:g}; expected a whole number (an index)", "answer")
        question = fields.text("question")
        return ChoiceExample(example_id, image, question, options, int(answer), tags, line)

    def asks(self, settings: Mapping[str, Any], example: ChoiceExample) -> list[Ask]:
        """One request per order of the options shown (one without ``rotate``)."""
        scoring = settings.get("scoring", "likelihood")
        template = settings.get("prompt", QUESTION_PROMPT)
        if scoring == "likelihood":
            prompt = fill_prompt(template, example.question)
            return [Ask("continuations", example.image, prompt, example.options)]
        out = []
        for order in self._orders(settings, example):
            shown = lettered([example.options[i] for i in order])
            prompt = fill_prompt(template, example.question, shown)
            if scoring == "letter":
                letters = tuple(LETTERS[: len(order)])
                out.append(Ask("next_token", example.image, prompt, letters))
            else:
                tokens = int(settings.get("max_new_tokens", MAX_NEW_TOKENS))
                out.append(Ask("generate", example.image, prompt, (), tokens))
        return out

    def _orders(self, settings: Mapping[str, Any], example: ChoiceExample) -> list[list[int]]:
        k = len(example.options)
        return [rotation(k, shift) for shift in range(k if settings.get("rotate") else 1)]

    def judge_replies(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[ChoiceExample],
        replies: Sequence[list[Reply]],
    ) -> Judgement:
        """Each order's pick against the answer; the example passes when every order does."""
        scoring = settings.get("scoring", "likelihood")
        rotated = bool(settings.get("rotate"))
        picked = [
            _pick_all(example, self._orders(settings, example), asked, scoring, settings)
            for example, asked in zip(examples, replies, strict=True)
        ]
        extra: dict[str, float] = {}
        if scoring == "generate":
            extra["unparseable"] = float(sum(p.picks.count(None) for p in picked))
        if rotated:
            extra.update(_order_bias(picked))
        return Judgement(
            np.array([all(p.rights) for p in picked], dtype=bool),
            np.array([any(p.ties) for p in picked], dtype=bool),
            extra,
            self.chance(settings, [(1, len(e.options)) for e in examples]),
            "log-probability" if scoring != "generate" else "generated",
            tuple(
                _said(asked, p.picks, rotated, scoring)
                for asked, p in zip(replies, picked, strict=True)
            ),
            tuple(p.grid for p in picked),
        )

    def describe_reply(self, example: ChoiceExample, said: Mapping[str, Any]) -> str:
        """The right option and what was picked (per order when rotated)."""
        picks = said["extracted"] if isinstance(said["extracted"], list) else [said["extracted"]]
        shown = ", ".join("unparseable" if p is None else repr(example.options[p]) for p in picks)
        outputs = said.get("outputs", [said["output"]] if "output" in said else [])
        heard = f"; said {', '.join(repr(o) for o in outputs)}" if outputs else ""
        right = example.options[example.answer]
        return f"{example.question!r}: expected {right!r}, picked {shown}{heard}"

    def grid(self, example: ChoiceExample) -> Grid:
        """The image and the options in the example's order (what reports show)."""
        return (example.image,), example.options

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """1 x the options."""
        options = raw.get("options")
        return 1, len(options) if isinstance(options, list) else 0

    def chance(
        self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]
    ) -> float | None:
        """1/k per example, (1/k)^k when every one of k orders must be right."""
        if not shapes:
            return None
        rotated = bool(settings.get("rotate"))
        return float(np.mean([(1 / k) ** (k if rotated else 1) for _, k in shapes if k]))

    def describe_failure(self, example: ChoiceExample, grid: np.ndarray) -> str:
        """The right option and every option's score in the first order."""
        scores = scored_texts(example.options, grid[0]) if len(grid) else "no scores"
        return f"{example.question!r}: expected {example.options[example.answer]!r}; {scores}"

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The right option is named in the detail line."""
        return set(), set(), set()

    def rows(self, example: ChoiceExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The question with its options, the right one named."""
        label = f"{example.question} (answer: {example.options[example.answer]})"
        return [(label, list(example.options), [example.image])]

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The truth's question with every member's answer as the options (the set's order);
        without a ``question:``, which of the set's captions describes the true scene."""
        truth = candidates.truth
        asked = bool(candidates.questions)
        options = [a[0] for a in candidates.answers] if asked else list(candidates.captions)
        return [
            {
                "id": candidates.example_id,
                "image": {"scene": candidates.scenes[truth]},
                "question": candidates.questions[truth] if asked else GENERATED_QUESTION,
                "options": options,
                "answer": truth,
                "tags": dict(candidates.tags),
            }
        ]


@dataclass(frozen=True)
class _Picks:
    """One example's picks, one per order shown: right or not, decided by a tie or not, the
    position of the right option in that order, and the option scores (orders x options)."""

    picks: list[int | None]
    rights: list[bool]
    ties: list[bool]
    positions: list[int]
    grid: np.ndarray


def _pick_all(
    example: ChoiceExample,
    orders: list[list[int]],
    asked: Sequence[Reply],
    scoring: str,
    settings: Mapping[str, Any],
) -> _Picks:
    """The pick of every order (``orders[r][p]``: the option shown at position p)."""
    picks: list[int | None] = []
    rights, ties, rows = [], [], []
    for order, reply in zip(orders, asked, strict=True):
        if scoring == "generate":
            position = extract_choice(reply.output or "", [example.options[i] for i in order])
            pick = None if position is None else order[position]
            right, tie = pick == example.answer, False
        else:
            row = np.empty(len(order), dtype=np.float32)
            row[order] = reply.scores  # back to the example's order
            rows.append(row)
            right, tie, pick = _scored_pick(row, example.answer, settings.get("ties", "fail"))
        picks.append(pick)
        rights.append(right)
        ties.append(tie)
    grid = np.array(rows, dtype=np.float32).reshape(len(rows), len(example.options))
    positions = [order.index(example.answer) for order in orders]
    return _Picks(picks, rights, ties, positions, grid)


def _order_bias(picked: Sequence[_Picks]) -> dict[str, float]:
    """``first_order_accuracy`` (the examples' order alone) and ``accuracy_at_X``: the share
    of orders answered right among those showing the right option at letter X."""
    by_position: dict[int, list[bool]] = {}
    for p in picked:
        for position, right in zip(p.positions, p.rights, strict=True):
            by_position.setdefault(position, []).append(right)
    out = {"first_order_accuracy": float(np.mean([p.rights[0] for p in picked]))}
    for position, rights in sorted(by_position.items()):
        out[f"accuracy_at_{LETTERS[position]}"] = float(np.mean(rights))
    return out


def _scored_pick(row: np.ndarray, answer: int, rule: str) -> tuple[bool, bool, int | None]:
    """(right, decided by a tie, the option picked: None when a tie left none)."""
    others = np.delete(row, answer)[None, :]
    true = row[answer : answer + 1]
    right = bool(metrics.beats_all(true, others, ties=rule)[0])
    tie = bool(metrics.decided_by_tie(true, others)[0])
    if right:
        return True, tie, answer
    return False, tie, None if tie else int(np.argmax(row))


def _said(
    asked: Sequence[Reply], picks: list[int | None], rotated: bool, scoring: str
) -> dict[str, Any]:
    """What samples.jsonl records: the prompt(s), output(s) and the pick(s)."""
    if not rotated:
        out: dict[str, Any] = {"prompt": asked[0].rendered}
        if scoring == "generate":
            out["output"] = asked[0].output
        out["extracted"] = picks[0]
        return out
    out = {"prompts": [reply.rendered for reply in asked]}
    if scoring == "generate":
        out["outputs"] = [reply.output for reply in asked]
    out["extracted"] = picks
    return out


CHOICE = ChoiceTask()
