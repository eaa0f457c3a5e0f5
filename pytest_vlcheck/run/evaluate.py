"""``evaluate``: run checklists on a model from Python (a training loop, a notebook).

The same settings checks, scoring, gates and outputs as a pytest run, with no pytest: the
returned ``Run`` equals what ``--vl-report`` writes for the same weights and checklists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist import ChecklistTest
from pytest_vlcheck.errors import ModelLoadError, SettingsError, VlcheckUserError
from pytest_vlcheck.models.registry import ModelSpec
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.verdict import final, unmeasured
from pytest_vlcheck.run.arguments import check_arguments, warn_unstepped
from pytest_vlcheck.run.checklists import checklist_files, given_paths, load_tests, selected
from pytest_vlcheck.run.distributed.branch import for_ranks, shared_run
from pytest_vlcheck.run.distributed.collective import collective, on_rank_zero, run_digest
from pytest_vlcheck.run.live_runners import LIVE_RUNNERS
from pytest_vlcheck.run.outcome import Run
from pytest_vlcheck.run.session import VlcheckSession
from pytest_vlcheck.run.settings import KeywordOptions, Settings, build_settings
from pytest_vlcheck.run.sinks import emit_all_warning_on_loggers, file_sinks

LogSpec = str | Callable[[dict[str, float], int | None], None]


def evaluate(
    model: Any,
    checklists: str | Path | Sequence[str | Path],
    *,
    preprocess: Any = None,
    tokenizer: Any = None,
    name: str | None = None,
    step: int | None = None,
    log: LogSpec | Sequence[LogSpec] | None = None,
    report_dir: str | Path | None = None,
    baseline: str | Path | None = None,
    bundled: bool = False,
    select: str | Sequence[str] | None = None,
    distributed: bool = True,
    distributed_timeout: float | None = None,
    **options: Any,
) -> Run:
    """Score ``checklists`` on ``model`` and return the run's typed results.

    ``model`` is a ``--vl-model`` spec (``NAME=SPEC`` too), a live open_clip model with its
    ``preprocess`` and ``tokenizer``, a live transformers CLIP-family or SigLIP model with
    ``preprocess=processor``, or an object with the scorer protocol. ``checklists`` is a
    path or a list of files and folders (folders are searched for checklist files);
    ``bundled`` adds the shipped suite; ``select`` keeps the tests with these ids or
    capability prefixes. ``options`` are the ``--vl-*`` run options by their Python names
    (``batch_size=32``, ``max_drop=1.0``, ``save_baseline="b.json"``). ``report_dir`` writes
    the ``--vl-report`` files, ``baseline`` gates against a baseline, ``log`` sends each
    model's scalars (``Run.scalars``) at ``step`` to loggers. A mistake in any argument
    raises one ``VlcheckUserError`` naming it, before any scoring.

    Under ``torch.distributed`` (a process group of several ranks) the call is collective:
    every rank calls it with the same arguments, encodes a share and returns the same
    ``Run``; only rank 0 writes and logs (``run.distributed``; ``distributed=False``: this
    rank's own whole evaluation; ``distributed_timeout``: seconds a rank waits for the others).
    """
    check_arguments(
        model,
        name=name,
        select=select,
        distributed=distributed,
        distributed_timeout=distributed_timeout,
    )
    group = collective(distributed, distributed_timeout)
    model, lockstep = (model, False) if group is None else for_ranks(model)
    given = {"report_dir": report_dir, "baseline": baseline, "log": log, "step": step}
    source = KeywordOptions({**options, **given})
    if isinstance(model, str):
        source.values["model"] = model
    settings, scorer = _with_model(build_settings(source), model, preprocess, tokenizer, name)
    warn_unstepped(settings)
    paths = _paths(checklists, bundled)
    tests = selected(load_tests(checklist_files(paths), settings.image_root), select)
    if group is not None:
        group.handshake(run_digest(settings, tests, select))
    session = VlcheckSession(settings)
    live = None
    if scorer is not None:
        (spec,) = settings.specs
        live = LIVE_RUNNERS.runner_for(
            model,
            scorer,
            spec,
            settings.model_options,
            settings.url_cache_dir,
            image_memory=settings.image_memory_bytes,
        )
        session.attach(spec.name, live)
    measure = partial(_measure, session, tests)
    try:
        run = measure() if group is None else shared_run(group, session, measure, lockstep, scorer)
    finally:
        session.close()
        if live is not None:
            live.release()
    outputs = partial(emit_all_warning_on_loggers, run, file_sinks(run))
    outputs() if group is None else on_rank_zero(group, outputs)
    return run


def _with_model(
    settings: Settings, model: Any, preprocess: Any, tokenizer: Any, name: str | None
) -> tuple[Settings, Any]:
    """The settings with the model's spec under ``name``, and a model object's scorer (None
    for a spec string, which the session loads)."""
    scorer = None
    if isinstance(model, str):
        if preprocess is not None or tokenizer is not None:
            raise SettingsError(
                "preprocess/tokenizer: given with a model spec string; expected them only "
                "with a model object"
            )
    else:
        name = name or "model"
        from pytest_vlcheck.models.live.check import check_live_inputs
        from pytest_vlcheck.models.live.scorer import live_scorer

        scorer = live_scorer(
            model, preprocess=preprocess, tokenizer=tokenizer, options=settings.model_options
        )
        check_live_inputs(model, preprocess, tokenizer)  # one tiny input, before any scoring
        settings = replace(settings, specs=(ModelSpec.for_object(name, model),))
    if name is not None:
        if len(settings.specs) > 1:
            raise SettingsError(
                f"name {name!r}: the model spec is a checkpoint glob, whose checkpoints are "
                "named after their files; expected no name= with a glob"
            )
        settings = replace(settings, specs=tuple(replace(s, name=name) for s in settings.specs))
    return settings, scorer


def _measure(session: VlcheckSession, tests: list[ChecklistTest]) -> Run:
    """Every test on every model, the way the plugin's items judge them."""
    models = [spec.name for spec in session.settings.specs]
    session.count_gated([(test, model) for test in tests for model in models])
    for model in models:
        session.plan(model, tests)
    for test in tests:
        for model in models:
            session.record(_judged(session, test, model))
    return session.finished()


def _judged(session: VlcheckSession, test: ChecklistTest, model: str) -> CapabilityResult:
    """One test on one model with pytest's verdict: a known failure keeps its measured
    status (xfail), a user error (missing images, a scorer breaking the protocol) is an
    errored row with its first line; a model that will not load raises."""
    try:
        result = session.judge(test, model)
    except ModelLoadError:
        raise
    except VlcheckUserError as exc:
        threshold, file = session.settings.threshold, session.relative(test.file)
        empty = unmeasured(test, model, "error", threshold, file)
        return final(empty, outcome="error", error=exc)
    return final(result, known_failure=test.known_failures.get(model, ""))


def _paths(checklists: Any, bundled: bool) -> list[Path]:
    """The paths to search, the bundled suite's folder added with ``bundled``."""
    paths = given_paths(checklists)
    if bundled:
        from pytest_vlcheck.checklist.bundled import bundled_checklists_dir

        try:
            paths.append(bundled_checklists_dir())
        except FileNotFoundError as exc:
            raise SettingsError(f"bundled: {exc}") from None
    return [Path(path) for path in paths]
