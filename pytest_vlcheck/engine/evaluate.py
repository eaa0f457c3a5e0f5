"""One test on one model: read its examples' scores, apply the task's metric, build the result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_vlcheck import metrics
from pytest_vlcheck.checklist.schema import ChecklistTest, Example, GroupExample, MatchExample
from pytest_vlcheck.engine.grids import example_grid
from pytest_vlcheck.engine.scoring import ModelRunner
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.metrics.aggregates import macro_average
from pytest_vlcheck.results import FailureExample, TestResult

FAILURES_KEPT = 5
MISSING_LISTED = 5
MISSING_POLICIES = ("error", "skip")


class MissingImagesError(RuntimeError):
    """Some examples' images could not be loaded and the policy is to error."""


@dataclass(frozen=True)
class _Outcome:
    """Per-example pass/fail plus the task's extra metrics."""

    correct: np.ndarray
    metrics: dict[str, float]
    chance: float
    score_kind: str = "similarity"


def evaluate_test(
    test: ChecklistTest,
    runner: ModelRunner,
    *,
    threshold: float | None = None,
    missing: str = "error",
) -> TestResult:
    """Score ``test`` with ``runner`` (already prepared, or prepared here) and judge it.

    ``threshold`` overrides the test's own (``--vl-threshold``). ``missing`` is ``error``
    (unavailable images fail the whole test with their names) or ``skip`` (score the rest,
    count the others as unscored).
    """
    runner.prepare([test])
    grids: list[np.ndarray] = []
    scored: list[Example] = []
    lost: list[tuple[Example, list[ImageRef]]] = []
    for example in test.examples:
        grid = runner.grid(example)
        if isinstance(grid, list):
            lost.append((example, grid))
        else:
            grids.append(grid)
            scored.append(example)
    if lost and missing == "error":
        raise MissingImagesError(_missing_message(test, runner, lost))
    unscored = {"image unavailable": len(lost)} if lost else {}
    limit = test.threshold if threshold is None else threshold
    if not scored:
        raise MissingImagesError(
            _missing_message(test, runner, lost) + "; no example of the test could be scored"
        )
    outcome = _outcome(test, scored, grids, runner)
    if test.macro is not None:
        outcome.metrics.update(_macro_metrics(test, scored, outcome.correct))
    n, passed = len(scored), int(outcome.correct.sum())
    low, high = metrics.wilson_interval(passed, n)
    return TestResult(
        file=str(test.file),
        test=test.id,
        capability=test.capability,
        task=test.task,
        model=runner.spec.name,
        n=n,
        passed=passed,
        pass_rate=passed / n,
        ci_low=low,
        ci_high=high,
        threshold=limit,
        chance=outcome.chance,
        status="passed" if passed / n >= limit else "failed",
        line=test.line,
        criterion=test.criterion if test.task == "group" else "",
        score_kind=outcome.score_kind,
        metrics=outcome.metrics,
        slices=metrics.slice_rates(outcome.correct, [e.tags for e in scored]),
        failures=_failures(scored, grids, outcome.correct),
        unscored=unscored,
    )


def _macro_metrics(
    test: ChecklistTest, examples: Sequence[Example], correct: np.ndarray
) -> dict[str, float]:
    """The test's macro average over its tag and how many values went into it."""
    assert test.macro is not None
    macro = macro_average(
        correct,
        [e.tags.get(test.macro.tag) for e in examples],
        min_count=test.macro.min_count,
        exclude=test.macro.exclude,
    )
    out = {"macro_values": float(len(macro.per_value))}
    if macro.value is not None:
        out["macro_average"] = macro.value
    return out


def _outcome(
    test: ChecklistTest, examples: Sequence[Example], grids: list[np.ndarray], runner: ModelRunner
) -> _Outcome:
    if test.task == "caption":
        true = np.array([g[0, 0] for g in grids], dtype=np.float32)
        others = metrics.pad_rows([g[0, 1:] for g in grids])
        return _Outcome(
            metrics.beats_all(true, others), {}, metrics.choice_chance([g.shape[1] for g in grids])
        )
    if test.task == "image":
        per_image = [metrics.prompt_ensemble(g) for g in grids]
        true = np.array([s[0] for s in per_image], dtype=np.float32)
        others = metrics.pad_rows([s[1:] for s in per_image])
        return _Outcome(
            metrics.beats_all(true, others), {}, metrics.choice_chance([g.shape[0] for g in grids])
        )
    if test.task == "group":
        stacked = np.stack(grids)
        scores = metrics.group_outcomes(stacked)
        extra = {f"{name}_score": float(values.mean()) for name, values in scores.items()}
        extra["caption_choice_accuracy"] = float(metrics.group_caption_choices(stacked).mean())
        return _Outcome(scores[test.criterion], extra, metrics.GROUP_CHANCE[test.criterion])
    raw = np.array([g[0, 0] for g in grids], dtype=np.float32)
    values, kind = runner.match_scores(raw)
    labels = np.array([e.label for e in examples if isinstance(e, MatchExample)], dtype=bool)
    neg_types = [e.neg_types for e in examples if isinstance(e, MatchExample)]
    correct = metrics.match_correct(values, labels, test.cutoff)
    return _Outcome(
        correct, metrics.match_accuracies(correct, labels, neg_types), metrics.MATCH_CHANCE, kind
    )


def _failures(
    examples: Sequence[Example], grids: list[np.ndarray], correct: np.ndarray
) -> list[FailureExample]:
    """The first few failing examples with every score they involved."""
    out = []
    for example, grid, ok in zip(examples, grids, correct, strict=True):
        if ok:
            continue
        refs, texts = example_grid(example)
        out.append(
            FailureExample(
                id=example.id,
                images=[r.describe() for r in refs],
                texts=list(texts),
                scores=[[float(v) for v in row] for row in grid],
                detail=_failure_detail(example, refs, texts, grid),
            )
        )
        if len(out) == FAILURES_KEPT:
            break
    return out


def _failure_detail(
    example: Example, refs: Sequence[ImageRef], texts: Sequence[str], grid: np.ndarray
) -> str:
    """One line a person can read: what should have won, and what it scored against."""
    if isinstance(example, MatchExample):
        label = "match" if example.label else "no match"
        return f"{refs[0].describe()} / {texts[0]!r}: score {grid[0, 0]:.4f}, label {label}"
    if len(refs) == 1:
        cells = ", ".join(f"{t!r} {grid[0, j]:.4f}" for j, t in enumerate(texts))
        return f"{refs[0].describe()}: {cells} (first is true)"
    if isinstance(example, GroupExample):
        return "; ".join(
            f"{refs[i].describe()}: {texts[0]!r} {grid[i, 0]:.4f}, {texts[1]!r} {grid[i, 1]:.4f}"
            for i in range(2)
        )
    means = grid.astype(np.float64).mean(axis=1)
    cells = ", ".join(f"{r.describe()} {means[i]:.4f}" for i, r in enumerate(refs))
    return f"{' | '.join(texts)!r}: {cells} (first is true)"


def _missing_message(
    test: ChecklistTest, runner: ModelRunner, lost: list[tuple[Example, list[ImageRef]]]
) -> str:
    images = {ref.key: ref for _, refs in lost for ref in refs}
    lines = [
        f"{len(images)} image(s) of {len(lost)} example(s) could not be loaded "
        f"(use --vl-missing=skip to score the rest):"
    ]
    for example, refs in lost[:MISSING_LISTED]:
        for ref in refs:
            lines.append(
                f"  {test.file}:{example.line}: {ref.describe()}: {runner.unavailable[ref.key]}"
            )
    if len(lost) > MISSING_LISTED:
        lines.append(f"  ... and {len(lost) - MISSING_LISTED} more example(s)")
    return "\n".join(lines)


def unscored_result(
    test: ChecklistTest, model: str, status: str, threshold: float | None = None
) -> TestResult:
    """The matrix row of a test that produced no measurement (errored or skipped)."""
    return TestResult(
        file=str(test.file),
        test=test.id,
        capability=test.capability,
        task=test.task,
        model=model,
        n=0,
        passed=0,
        pass_rate=0.0,
        ci_low=0.0,
        ci_high=1.0,
        threshold=test.threshold if threshold is None else threshold,
        chance=0.0,
        status=status,
        line=test.line,  # type: ignore[arg-type]
        criterion=test.criterion if test.task == "group" else "",
    )
