"""The state of one vlcheck run: settings, one runner per model, and the results gathered.

Kept free of pytest so the ``vlcheck`` command and Python callers can drive the same flow; the
plugin stores one ``VlcheckSession`` in the pytest config's stash.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.checklist.bundled import report_name
from pytest_vlcheck.gates.conditions import run_conditions
from pytest_vlcheck.gates.counting import count_gated, count_python_gated
from pytest_vlcheck.gates.decision import apply_gate
from pytest_vlcheck.gates.reference import with_reference
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import Prior, PriorNotApplicable
from pytest_vlcheck.results.run_meta import ModelMeta, ShardPlan
from pytest_vlcheck.results.verdict import settled
from pytest_vlcheck.run.settings import Settings

if TYPE_CHECKING:  # the engine, priors and reports load numpy: imported where they are used,
    # so a pytest run that collects no checklist never pays for them (the plugin makes a session)
    import numpy as np

    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine import ModelRunner
    from pytest_vlcheck.engine.runner.progress import Writer
    from pytest_vlcheck.engine.runner.stats import ScoringStats
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache
    from pytest_vlcheck.priors import AveragePrior
    from pytest_vlcheck.report.loader import RunError
    from pytest_vlcheck.run.outcome import Run

_LOCATED = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+): (?P<message>.+)$")


@dataclass
class VlcheckSession:
    """Runners per model, the tests planned for each, and every result seen."""

    settings: Settings
    runners: dict[str, ModelRunner] = field(default_factory=dict, repr=False)
    planned: dict[str, list[ChecklistTest]] = field(default_factory=dict, repr=False)
    results: list[CapabilityResult] = field(default_factory=list, repr=False)
    gated: int = 0
    """m: how many test x model items of the whole selection have a baseline entry."""
    python_gated: int = 0
    """The part of m that Python tests add: baseline entries of the selected ``vl_model``
    tests (one per ``evaluate`` row the baseline holds for them)."""
    load_failures: dict[str, str] = field(default_factory=dict)
    """Per model that failed to load, the node id whose error explains why."""
    progress: Writer | None = None
    """Where runners draw their progress line (None: silent)."""
    _cache: EmbeddingCache | None = None
    perplexities: dict[str, float] = field(default_factory=dict, repr=False)
    """Each caption's averaged prior perplexity, scored once per run."""
    _prior: AveragePrior | None = None
    collection_errors: list[RunError] = field(default_factory=list)
    """Files that failed to collect, for the report files."""
    shard_plan: ShardPlan | None = None
    """The ``--vl-shard`` split this run is one job of (None: not sharded)."""
    worker_stats: dict[str, ScoringStats] = field(default_factory=dict, repr=False)
    """On an xdist controller: the scoring stats its workers sent, summed per model."""
    worker_answers: dict[str, str] = field(default_factory=dict, repr=False)  # from xdist workers
    plan_seconds: dict[str, tuple[float, int, int]] = field(default_factory=dict, repr=False)
    """Per model whose plan was scored in one pass: (its seconds, the examples of the plan,
    the id of the test whose item paid for it), for ``booked_seconds``."""

    def runner(self, model: str) -> ModelRunner:
        """The model's runner, made on first use (the model itself loads on first scoring)."""
        from pytest_vlcheck.engine import ModelRunner

        if model not in self.runners:
            spec = next(s for s in self.settings.specs if s.name == model)
            loader = ImageLoader(self.settings.url_cache_dir)
            options = self.settings.model_options
            self.runners[model] = ModelRunner(
                spec, options, loader, self.embedding_cache(), self.progress
            )
        return self.runners[model]

    def attach(self, model: str, runner: ModelRunner) -> None:
        """Score ``model`` with ``runner``, a live model object's, kept across a training
        loop's calls (``run.live_runners``), instead of one this session would make."""
        self.runners[model] = runner

    def embedding_cache(self) -> EmbeddingCache | None:
        """The run's embedding cache, opened on first use and shared by every model."""
        from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

        root = self.settings.embedding_cache_dir
        if self._cache is None and root is not None:
            self._cache = EmbeddingCache(root, max_bytes=self.settings.embedding_cache_bytes)
        return self._cache

    def close(self) -> None:
        """Close the embedding cache (a later use opens it again)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def plan(self, model: str, tests: list[ChecklistTest]) -> None:
        """Tests to score together, in one batched pass, when the model's first item runs."""
        self.planned[model] = tests

    def judge(self, test: ChecklistTest, model: str) -> CapabilityResult:
        """Judge one test on one model.

        The model's first test scores the whole plan in one batched pass; a test outside the
        plan (an xdist worker scores only the items it runs) is scored on its own.
        """
        started = time.perf_counter()  # the imports and the runner are the plan's cost too
        from pytest_vlcheck.engine import judge_test
        from pytest_vlcheck.report.thumbnails import THUMBNAIL_DIR, write_thumbnails

        runner = self.runner(model)
        planned = self.planned.pop(model, [])
        runner.prepare(planned if any(t is test for t in planned) else [*planned, test])
        if len(planned) > 1:
            examples = sum(len(t.examples) for t in planned)
            self.plan_seconds[model] = (time.perf_counter() - started, examples, id(test))
        report_dir = self.settings.report_dir
        result = judge_test(
            test,
            runner,
            threshold=self.settings.threshold,
            missing=self.settings.missing,
            thumbnails=(
                None
                if report_dir is None
                else partial(write_thumbnails, directory=report_dir / THUMBNAIL_DIR)
            ),
        )
        result = settled(
            replace(
                result,
                file=self.relative(test.file),
                content_hash=test.content_hash,
                prior=self.prior_of(test, result),
            )
        )
        conditions = run_conditions(self.settings.model_options)
        m = self.gated + self.python_gated
        return apply_gate(result, self.settings.gates, m=m, conditions=conditions)

    def booked_seconds(self, test: ChecklistTest, model: str, setup_seconds: float) -> float:
        """An item's setup time as its JUnit testcase books it (``booked_share``)."""
        return booked_share(self.plan_seconds.get(model), test, setup_seconds)

    def prior_of(self, test: ChecklistTest, result: CapabilityResult) -> Prior | None:
        """The result's prior block; without ``--vl-prior`` only a note on a hard threshold."""
        from pytest_vlcheck.priors.evaluation import NO_PRIOR, prior_block

        if not self.settings.priors:
            if test.hard_threshold is None:
                return None
            return PriorNotApplicable((), NO_PRIOR, test.hard_threshold)
        from pytest_vlcheck.priors import parse_prior_spec

        names = [parse_prior_spec(text).name for text in self.settings.priors]
        return prior_block(test, result.outcomes, self.perplexity, names)

    def _loaded_prior(self) -> AveragePrior:
        if self._prior is None:
            from pytest_vlcheck.priors import load_priors

            self._prior = load_priors(
                self.settings.priors, self.settings.model_options, self.embedding_cache()
            )
        return self._prior

    def perplexity(self, texts: Sequence[str]) -> np.ndarray:
        """Averaged prior perplexities; each unique text is scored once per run."""
        import numpy as np

        from pytest_vlcheck.priors import caption_perplexities

        missing = sorted(set(texts) - self.perplexities.keys())
        if missing:
            self.perplexities.update(caption_perplexities(self._loaded_prior(), missing))
        return np.array([self.perplexities[t] for t in texts], dtype=np.float64)

    def relative(self, path: Path) -> str:
        """A checklist path as every report writes it: relative to pytest's rootdir (POSIX),
        so baseline keys match across checkouts and machines; an installed bundled checklist
        outside the rootdir is ``bundled:NAME.yaml`` (see ``bundled``)."""
        root = self.settings.rootdir
        if root is not None and path.is_absolute() and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
        return report_name(path) or path.as_posix()

    def count_gated(self, items: list[tuple[ChecklistTest, str]]) -> None:
        """Count m over the whole selection (before any sharding or xdist split)."""
        keys = [(self.relative(test.file), test.id, model) for test, model in items]
        self.gated = count_gated(self.settings.gates, keys)

    def count_python_gated(self, tests: list[tuple[str, str, str]]) -> None:
        """Add the baseline entries of selected Python tests to m (``gates.counting``)."""
        self.python_gated = count_python_gated(self.settings.gates, tests)

    def record(self, result: CapabilityResult) -> None:
        """Keep a result for the matrix and the report files."""
        self.results.append(result)

    def record_collection_error(self, path: str, text: str) -> None:
        """Record a file that failed to collect: one error per ``FILE:LINE: message`` line of
        its report, else the report's last line under the file's path."""
        from pytest_vlcheck.report.loader import RunError

        lines = [line.strip() for line in text.splitlines() if line.strip()]
        located = [m for line in lines if (m := _LOCATED.match(line))]
        for m in located:
            self.collection_errors.append(
                RunError(self.relative(Path(m["file"])), int(m["line"]), m["message"])
            )
        if not located:
            message = lines[-1].removeprefix("E").strip() if lines else "collection failed"
            self.collection_errors.append(RunError(self.relative(Path(path)), None, message))

    def ordered(self) -> list[CapabilityResult]:
        """Results in file, line, test and ``--vl-model`` order, however xdist delivered them
        (a parametrised Python test evaluates on one line under several names), each later
        model compared with the first (``reference``: needs every result, so here)."""
        order = {spec.name: index for index, spec in enumerate(self.settings.specs)}
        ordered = sorted(
            self.results, key=lambda r: (r.file, r.line, r.test, order.get(r.model, len(order)))
        )
        return with_reference(ordered, [spec.name for spec in self.settings.specs])

    def models_meta(self) -> list[ModelMeta]:
        """``matrix.json``'s models: name, spec and fingerprint, in ``--vl-model`` order; the
        checkpoints of a glob also carry their ``group`` and ``step``."""
        fingerprints: dict[str, str] = {}
        for result in self.results:
            if result.fingerprint:
                fingerprints.setdefault(result.model, result.fingerprint)
        return [
            ModelMeta(
                name=spec.name,
                spec=spec.text,
                fingerprint=fingerprints.get(spec.name, ""),
                group=spec.group,
                step=spec.step if spec.group is not None else None,
            )
            for spec in self.settings.specs
        ]

    def finished(self) -> Run:
        """The run as its outputs read it: results in report order, the models, the
        collection errors, each model's scoring stats (summed from the workers on an xdist
        controller, else this session's runners') and the shard plan."""
        from pytest_vlcheck.run.outcome import Run

        stats = self.worker_stats or {name: runner.stats for name, runner in self.runners.items()}
        return Run(
            results=tuple(self.ordered()),
            models=tuple(self.models_meta()),
            settings=self.settings,
            errors=tuple(self.collection_errors),
            stats=stats,
            step=self.settings.step,
            shard=self.shard_plan,
            vqa_answers={**self.worker_answers, **loaded_answers(self.runners)},
        )

    def worker_output(self) -> dict[str, Any]:
        """What an xdist worker sends its controller: each model's scoring stats as plain
        numbers, the shard plan (every worker collects the whole selection) and the models
        that failed to load."""
        stats = {name: asdict(runner.stats) for name, runner in self.runners.items()}
        plan = self.shard_plan
        shard = None if plan is None else plan.to_json()
        sent: dict[str, Any] = {"stats": stats, "shard": shard, "load_failures": self.load_failures}
        return sent | {"vqa_answers": loaded_answers(self.runners)}

    def add_worker_output(self, sent: Mapping[str, Any]) -> None:
        """Take what one xdist worker sent (nothing, when it crashed): its stats are added
        per model, its shard plan is the run's."""
        from pytest_vlcheck.engine.runner.stats import ScoringStats, summed_per_model

        received = {name: ScoringStats(**stats) for name, stats in sent.get("stats", {}).items()}
        self.worker_stats = summed_per_model([self.worker_stats, received])
        if sent.get("shard") is not None:
            self.shard_plan = ShardPlan(**sent["shard"])
        for model, nodeid in sent.get("load_failures", {}).items():
            self.load_failures.setdefault(model, nodeid)


def loaded_answers(runners: Mapping[str, ModelRunner]) -> dict[str, str]:
    """How each generative model loaded in this process scores a pair's answer (its
    ``describe_answer``: the answer's text, separator and tokens), by model name; for the
    run block's ``vqa_answers`` (an xdist controller adds its workers')."""
    found: dict[str, str] = {}
    for name, runner in runners.items():
        source = runner.source
        describe = getattr(source.scorer, "describe_answer", None) if source.built else None
        if callable(describe):
            found[name] = str(describe())
    return found


def booked_share(
    plan: tuple[float, int, int] | None, test: ChecklistTest, setup_seconds: float
) -> float:
    """The model's first item scores every planned test in one pass (``plan``: its seconds,
    examples and paying test's id), so that pass is shared out by example count: else a
    "slowest tests" view blames whichever test came first."""
    if plan is None:
        return setup_seconds
    seconds, examples, payer = plan
    share = seconds * len(test.examples) / max(examples, 1)
    own = setup_seconds - seconds if id(test) == payer else setup_seconds
    return max(own, 0.0) + share
