"""One test x model outcome, in the shape ``matrix.json`` publishes (design-brief contract)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["passed", "failed", "skipped", "error"]


@dataclass
class FailureExample:
    """A failing example as the report shows it: the score of every image x text it used.

    ``scores[i][j]`` is s(images[i], texts[j]). By convention the first image and the first
    text are the true ones for ``caption`` and ``image`` tasks; ``group`` lists image 0, 1
    and caption 0, 1; ``match`` has one of each.
    """

    id: str
    images: list[str]
    texts: list[str]
    scores: list[list[float]]
    detail: str


@dataclass
class TestResult:
    """Everything measured for one checklist test on one model.

    ``metrics`` holds task-specific numbers (e.g. ``text_score``, ``positive_accuracy``);
    ``slices`` maps a tag name to its values to ``{"n", "passed", "pass_rate"}``;
    ``unscored`` counts examples that could not be scored (missing images), with reasons.
    ``criterion`` is a group test's pass criterion (text, image or group); ``score_kind`` says
    whether the decisive scores were similarities or match probabilities; ``message`` says
    why an errored or skipped test has no measurement.
    """

    __test__ = False  # not a pytest test class

    file: str
    test: str
    capability: str
    task: str
    model: str
    n: int
    passed: int
    pass_rate: float
    ci_low: float
    ci_high: float
    threshold: float
    chance: float
    status: Status
    line: int = 0
    criterion: str = ""
    score_kind: str = "similarity"
    metrics: dict[str, float] = field(default_factory=dict)
    slices: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    failures: list[FailureExample] = field(default_factory=list)
    unscored: dict[str, int] = field(default_factory=dict)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what crosses xdist and lands in ``matrix.json``)."""
        return asdict(self)
