"""One test on one model: read its examples' scores, let the task judge them, build the result.

The runner must already be prepared for the test (the session prepares every planned test in
one batched pass); this module only reads scores and asks the test's task kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pytest_vlcheck import fmt, metrics
from pytest_vlcheck.checklist.schema import ChecklistTest, MacroSpec
from pytest_vlcheck.engine.judging.extras import cluster_keys, result_extras
from pytest_vlcheck.engine.judging.missing import MissingImagesError, MissingPolicy
from pytest_vlcheck.engine.runner.asking import asking_replies
from pytest_vlcheck.engine.runner.model_runner import ModelRunner, Unscorable, text_grid
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.metrics.aggregates import all_of_rate, macro_average
from pytest_vlcheck.results import CapabilityResult, ExampleOutcome, FailureExample
from pytest_vlcheck.tasks import Example, Judgement, Task, get_task
from pytest_vlcheck.tasks.asking import AskingTask

FAILURES_KEPT = 5
MISSING_LISTED = 5

ThumbnailWriter = Callable[[Sequence[ImageRef], Callable[[ImageRef], Any]], list[str]]
"""``(refs, load) -> one thumbnail file name per ref`` (empty when one cannot be loaded):
the session passes the report's writer, so the engine knows nothing of reports."""


class TextOnlyError(VlcheckUserError, RuntimeError):
    """A text-to-text test met a model without text embeddings (a score file, a
    cross-encoder)."""


def judge_test(
    test: ChecklistTest,
    runner: ModelRunner,
    *,
    threshold: float | None = None,
    missing: MissingPolicy = "error",
    thumbnails: ThumbnailWriter | None = None,
) -> CapabilityResult:
    """Judge ``test`` from ``runner``'s scores.

    ``threshold`` overrides the test's own (``--vl-threshold``). ``missing`` is ``error``
    (unavailable images fail the whole test with their names) or ``skip`` (score the rest,
    count the others as unscored). With ``thumbnails``, the kept failures' images are
    written through it (the session passes ``report.thumbnails.write_thumbnails``).
    """
    task = get_task(test.task)
    if task.text_only and runner.mode != "dual":
        raise TextOnlyError(
            f"{fmt.a(test.task)} test compares texts with texts; {runner.source.not_dual()}, so it "
            "has no text embeddings; expected "
            "a dual encoder (open_clip, hf: CLIP or SigLIP, or a py: scorer with encode_texts)"
        )
    scored, lost, grids, judgement = _judged(task, test, runner, missing)
    n, passed = len(scored), int(judgement.correct.sum())
    low, high = metrics.wilson_interval(passed, n)
    limit = test.threshold if threshold is None else threshold
    extra: dict[str, float | None] = dict(judgement.metrics)
    judged: float | None = passed / n
    if test.macro is not None:
        extra.update(_macro_metrics(test.macro, scored, judgement.correct))
        if test.macro.judge:
            judged = extra.get("macro_average")
    for tag in test.all_of:
        extra.update(_all_of_metrics(tag, scored, lost, judgement.correct))
    clusters = cluster_keys(test, task, scored)
    unscored = [example for example, _ in lost]
    return CapabilityResult(
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
        chance=judgement.chance,
        status="passed" if judged is not None and judged >= limit else "failed",
        line=test.line,
        criterion=test.criterion,
        score_kind=judgement.score_kind or runner.score_kind,
        ties=int(judgement.ties.sum()),
        metrics=extra,
        judged="macro_average" if test.macro is not None and test.macro.judge else "pass_rate",
        slices=metrics.slice_rates(judgement.correct, _slice_tags(test, scored)),
        failures=_failures(task, scored, grids, judgement, runner, thumbnails),
        unscored={"image unavailable": len(lost)} if lost else {},
        fingerprint=runner.fingerprint,
        outcomes=_outcomes(task, scored, grids, judgement, clusters),
        **result_extras(test, task, scored, unscored, judgement.correct, clusters),
    )


def _judged(
    task: Task, test: ChecklistTest, runner: ModelRunner, missing: MissingPolicy
) -> tuple[list[Example], list[tuple[Example, Unscorable]], list[np.ndarray], Judgement]:
    """The scored examples, the unscorable ones, their score grids and the task's judgement:
    from score grids, or from a generative model's replies (``engine.runner.asking``)."""
    grids: list[np.ndarray] = []
    scored: list[Example] = []
    lost: list[tuple[Example, Unscorable]] = []
    asking = isinstance(task, AskingTask) and task.asks_model(test.settings)
    if asking:
        scored, replies, lost_refs = asking_replies(test, runner)
        why = runner.images.unavailable
        lost = [(e, Unscorable(refs, tuple(why[r.key] for r in refs))) for e, refs in lost_refs]
    else:
        for example in test.examples:
            grid = _scores(task, runner, example)
            if isinstance(grid, Unscorable):
                lost.append((example, grid))
            else:
                grids.append(grid)
                scored.append(example)
    if lost and (missing == "error" or not scored):
        suffix = "" if missing == "error" else "; no example of the test could be scored"
        raise MissingImagesError(_missing_message(test, lost) + suffix)
    if isinstance(task, AskingTask) and asking:
        judgement = task.judge_replies(test.settings, scored, replies)
        return scored, lost, list(judgement.grids), judgement
    return scored, lost, grids, task.judge(test.settings, scored, grids, runner)


def _scores(task: Task, runner: ModelRunner, example: Example) -> np.ndarray | Unscorable:
    """The example's score grid: texts x texts for a text-only kind, else images x texts."""
    if task.text_only:
        return text_grid(runner.text_vectors(task.grid(example)[1]))
    return runner.grid(task.grid(example), example.id)


def _macro_metrics(
    macro: MacroSpec, examples: Sequence[Example], correct: np.ndarray
) -> dict[str, float]:
    """The macro average over the tag's values and how many values went into it."""
    average = macro_average(
        correct,
        [e.tags.get(macro.tag) for e in examples],
        min_count=macro.min_count,
        exclude=macro.exclude,
    )
    out = {"macro_values": float(len(average.per_value))}
    if average.value is not None:
        out["macro_average"] = average.value
    return out


def _slice_tags(test: ChecklistTest, scored: Sequence[Example]) -> list[dict[str, str]]:
    """The examples' tags but the test's ``all_of`` ones: a value of those is one group (an
    MMVP pair, a NaturalBench record), whose rate is ``all_of_TAG``; a slice per group would
    be a table as long as the test."""
    return [{k: v for k, v in e.tags.items() if k not in test.all_of} for e in scored]


def _all_of_metrics(
    tag: str,
    scored: Sequence[Example],
    lost: Sequence[tuple[Example, Unscorable]],
    correct: np.ndarray,
) -> dict[str, float]:
    """``all_of_TAG``: the share of TAG's groups right in every member, and how many groups
    it counts (``all_of_TAG_groups``); a group with an unscored member is left out."""
    unscored = {e.tags[tag] for e, _ in lost if tag in e.tags}
    rate = all_of_rate(correct, [e.tags.get(tag) for e in scored], unscored)
    out = {f"all_of_{tag}_groups": float(rate.groups)}
    if rate.value is not None:
        out[f"all_of_{tag}"] = rate.value
    return out


def _outcomes(
    task: Task,
    examples: Sequence[Example],
    grids: Sequence[np.ndarray],
    judgement: Judgement,
    clusters: Sequence[str],
) -> tuple[ExampleOutcome, ...]:
    """Each example's verdict with its texts and images (and what a generative model said)."""
    said: Sequence[Mapping[str, Any]] = judgement.said or [{}] * len(examples)
    out = []
    for example, grid, ok, tie, cluster, told in zip(
        examples, grids, judgement.correct, judgement.ties, clusters, said, strict=True
    ):
        refs, texts = task.grid(example)
        images = [ref.describe() for ref in refs]
        outcome = ExampleOutcome(
            example.id, bool(ok), bool(tie), grid.tolist(), cluster, list(texts), images, dict(told)
        )
        out.append(outcome)
    return tuple(out)


def _failures(
    task: Task,
    examples: Sequence[Example],
    grids: list[np.ndarray],
    judgement: Judgement,
    runner: ModelRunner,
    thumbnails: ThumbnailWriter | None,
) -> list[FailureExample]:
    """The first few failing examples with every score they involved (and their images'
    thumbnails when there is a writer for them)."""
    out = []
    said: Sequence[Mapping[str, Any]] = judgement.said or [{}] * len(examples)
    for example, grid, ok, told in zip(examples, grids, judgement.correct, said, strict=True):
        if ok:
            continue
        refs, texts = task.grid(example)
        detail = (
            task.describe_reply(example, told)
            if told and isinstance(task, AskingTask)
            else task.describe_failure(example, grid)
        )
        out.append(
            FailureExample(
                id=example.id,
                images=[r.describe() for r in refs],
                texts=list(texts),
                scores=[[float(v) for v in row] for row in grid],
                detail=detail,
                thumbnails=[] if thumbnails is None else thumbnails(refs, runner.load_image),
                said=dict(told),
            )
        )
        if len(out) == FAILURES_KEPT:
            break
    return out


def _missing_message(test: ChecklistTest, lost: list[tuple[Example, Unscorable]]) -> str:
    images = {ref.key for _, unscorable in lost for ref in unscorable.refs}
    written_in = test.examples_file or test.file  # a JSON Lines file's lines are its own
    lines = [
        f"{len(images)} image(s) of {len(lost)} example(s) could not be loaded "
        f"(use --vl-missing=skip to score the rest):"
    ]
    for example, unscorable in lost[:MISSING_LISTED]:
        for ref, reason in zip(unscorable.refs, unscorable.reasons, strict=True):
            lines.append(f"  {written_in}:{example.line}: {ref.describe()}: {reason}")
    if len(lost) > MISSING_LISTED:
        lines.append(f"  ... and {len(lost) - MISSING_LISTED} more example(s)")
    return "\n".join(lines)
