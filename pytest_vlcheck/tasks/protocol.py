"""What a task kind is: the one place that knows what an example of that kind means.

A task owns its YAML keys and how an example is parsed, the grid of (images x texts) it needs
scored, how outcomes, ties and extra metrics are judged from those scores, its chance level,
how a failing example is described, which pairings reports mark as true, and the examples a
generator writes for it. The loader, engine, generators, importers, ``vlcheck render`` and the
reports ask the task through this protocol; none of them branches on the task's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pytest_vlcheck.lazy import numpy as np

if TYPE_CHECKING:
    from pytest_vlcheck.images.refs import ImageRef
    from pytest_vlcheck.parsing.example_fields import ParseContext
    from pytest_vlcheck.parsing.fields import Fields

Grid = tuple[tuple["ImageRef", ...], tuple[str, ...]]
"""An example's images (rows) and texts (columns); every pair is scored."""

TrueMarks = tuple[set[int], set[int], set[tuple[int, int]]]
"""Indices of the true texts, the true images and the true (image, text) cells of a grid."""


class Example(Protocol):
    """What every example has, whatever its kind: an id, tags for slices, a line."""

    @property
    def id(self) -> str: ...

    @property
    def tags(self) -> Mapping[str, str]: ...

    @property
    def line(self) -> int: ...


@dataclass(frozen=True)
class Judgement:
    """Per-example outcomes of one test and the numbers the task adds.

    ``correct[i]``: example i passed (under the test's ``ties:`` rule where the kind takes
    one; otherwise strictly: a tie fails). ``ties[i]``: an exact tie decided it (it passes
    when ties count as wins and fails when they count as losses). ``chance`` is None for a kind
    without a chance level (invariance: a model blind to the image is perfectly consistent).
    """

    correct: np.ndarray
    ties: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    chance: float | None = 0.0
    score_kind: str | None = None
    """The kind of the scores the decision was made on, when the kind turned the model's
    scores into others (``match``: probabilities); None: the model's own scores (the judge
    asks the runner: ``similarity``, ``log-probability``, ``score``)."""
    said: tuple[Mapping[str, Any], ...] = ()
    """A kind that asks a generative model (``tasks.asking``): what each example was asked
    and answered (``prompt``/``prompts``, ``output``/``outputs``, ``extracted``)."""
    grids: tuple[np.ndarray, ...] = ()
    """Such a kind's per-example scores (one row per prompt, options in the example's order)."""


class ScoreScale(Protocol):
    """How the scorer's raw values read as a decision (a task that thresholds needs it)."""

    def match_scores(self, scores: np.ndarray) -> tuple[np.ndarray, str]:
        """Scores for a yes/no decision and their kind (``probability`` or ``similarity``)."""
        ...


@dataclass(frozen=True)
class GenerationRules:
    """What a kind accepts from a ``generate:`` block (checked when the block is parsed).

    ``mirrors``: every member of a candidate set becomes the truth of one example;
    ``takes_prompts``: ``prompts:`` templates are allowed; ``text_negatives``: word shuffles
    (which describe no scene) are allowed; ``scene_negatives``: the exact number of scene
    negatives per example the kind needs, or None for any; ``changes``: ``perturb:`` items
    (perturbations, changed texts, occlusions) are allowed and reach ``CandidateSet.changes``.
    ``asks``: how a kind that asks a generative model takes ``question:`` and ``answer:``
    (``checklist.question_templates``): ``option`` (one answer template; each member's fill
    is one option), ``accepted`` (answer templates, a question required; the truth's fills
    are the accepted answers), ``yes_no`` (``Yes`` or ``No``: the answer to the question
    filled from the truth itself), or "" (the kind asks no questions).
    """

    mirrors: bool = True
    takes_prompts: bool = False
    text_negatives: bool = False
    scene_negatives: int | None = None
    changes: bool = False
    generates: bool = True
    asks: str = ""


@dataclass(frozen=True)
class CandidateSet:
    """One generated candidate set, from the view of one of its members as the truth.

    ``captions``/``scenes``/``texts``/``neg_names`` list every member (index ``truth`` is the
    true one); ``text_negatives(taken)`` draws the word shuffles of the true caption that are
    not in ``taken``. ``changes`` are the ``perturb:`` items of the generate block, their
    templates (``paraphrase``, ``text``) filled for every member and ``occlude: a`` turned
    into the index of object a in every member's scene, in member order. ``questions`` and
    ``answers`` (a generate block with ``question:``) are every member's question and answers
    filled from that member's truth; empty otherwise.
    """

    example_id: str
    truth: int
    captions: Sequence[str]
    scenes: Sequence[Mapping[str, Any]]
    texts: Sequence[Sequence[str]]
    neg_names: Sequence[str]
    tags: Mapping[str, str]
    text_negatives: Callable[[list[str]], list[str]]
    changes: Sequence[Mapping[str, Any]] = ()
    questions: Sequence[str] = ()
    answers: Sequence[Sequence[str]] = ()

    @property
    def others(self) -> list[int]:
        """Indices of the members that are not the truth."""
        return [i for i in range(len(self.captions)) if i != self.truth]


class Task(Protocol):
    """One task kind. Implementations are stateless module-level singletons; the values
    below are read only (plain class attributes provide them)."""

    @property
    def name(self) -> str: ...

    @property
    def example_keys(self) -> tuple[str, ...]: ...

    @property
    def optional_example_keys(self) -> tuple[str, ...]: ...

    @property
    def setting_keys(self) -> tuple[str, ...]: ...

    @property
    def generation(self) -> GenerationRules: ...

    @property
    def text_only(self) -> bool:
        """Scored texts against texts (the grid has no image): only a dual encoder serves it."""
        ...

    @property
    def example_schema(self) -> Mapping[str, Any]:
        """The JSON Schema of one example (``checklist.json_schema`` gathers every kind's)."""
        ...

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """The test-level keys only this kind takes (``setting_keys``), validated."""

    def parse_plain_examples(
        self, context: ParseContext, test_id: str, raws: Sequence[Any], lines: Sequence[int]
    ) -> tuple[Example, ...] | None:
        """A test's examples (inline or in a JSON Lines file) built fast when every one has
        the kind's plain shape, else None (then each is validated in full, with exact
        FILE:LINE)."""
        ...

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> Any:
        """A typed example from its validated mapping (keys already checked)."""
        ...

    def grid(self, example: Any) -> Grid:
        """The images and texts to score, the true ones first."""
        ...

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, ...]:
        """(images, texts) of an example as written in YAML (for chance before loading); a
        kind may add numbers its ``chance`` reads (caption: how many texts are true)."""
        ...

    def chance(
        self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]
    ) -> float | None:
        """Expected pass rate of a scorer that guesses uniformly (None: no such level)."""
        ...

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[Any],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """Outcomes, ties and metrics from each example's score grid."""
        ...

    def describe_failure(self, example: Any, grid: np.ndarray) -> str:
        """One line a person can read: what should have won, and what it scored."""
        ...

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """Which texts, images and cells of a failure's grid are the true ones."""
        ...

    def rows(self, example: Any) -> list[tuple[str, list[str], list[ImageRef]]]:
        """(label, texts, images) rows that show the example to a person."""
        ...

    def text_choices(self, example: Any) -> list[tuple[str, tuple[str, ...]]]:
        """(true text, competing texts) per choice a text-only judge could make; [] when the
        kind has no choice among texts (the text is fixed, or there is no choice)."""
        ...

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """Raw example mappings (YAML shape) for one candidate set and truth."""
        ...

    def verdict_notes(self, score_kind: str) -> list[str]:
        """Extra lines for a verdict's details."""
        ...

    def cluster_key(self, example: Any) -> str | None:
        """What examples of one cluster share for the clustered interval and gate (the image
        a caption test asks about, ...); None: the example is a cluster of its own."""
        ...
