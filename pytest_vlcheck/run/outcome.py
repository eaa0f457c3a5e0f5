"""``Run``: what one vlcheck run measured, as the Python API returns it and every output
(terminal matrix, report files, baseline, loggers) reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison
from pytest_vlcheck.results.run_meta import ModelMeta, RunBlock, ShardPlan
from pytest_vlcheck.results.verdict import passes
from pytest_vlcheck.run.settings import Settings

if TYPE_CHECKING:  # numpy and the report renderers: not for a run with nothing to report
    from pytest_vlcheck.engine.runner.stats import ScoringStats
    from pytest_vlcheck.report.loader import RunError


@dataclass(frozen=True)
class Run:
    """The results of one run: one ``CapabilityResult`` per test x model, in report order.

    ``models`` is ``matrix.json``'s model list (name, spec, fingerprint); ``errors`` the
    checklists that failed to collect; ``stats`` each model's scoring counts; ``step`` the
    training step the run measured (None outside training).
    """

    results: tuple[CapabilityResult, ...]
    models: tuple[ModelMeta, ...]
    settings: Settings
    errors: tuple[RunError, ...] = ()
    stats: Mapping[str, ScoringStats] = field(default_factory=dict)
    step: int | None = None
    shard: ShardPlan | None = None
    ranks: tuple[Mapping[str, ScoringStats], ...] = ()
    """Under ``torch.distributed``: each rank's stats, in rank order (``stats`` sums them)."""
    vqa_answers: Mapping[str, str] = field(default_factory=dict)
    """How each generative model loaded in the run scores a pair's answer (text, separator,
    tokens), by model name; in the run block as ``vqa_answers``."""

    def to_json(self) -> dict[str, Any]:
        """The ``matrix.json`` document (what ``--vl-report`` writes)."""
        from pytest_vlcheck.report import matrix_document

        return matrix_document(self.models, self.results, self.errors, run_block=self.run_block())

    def run_block(self) -> RunBlock:
        """``matrix.json``'s ``run``: how the run measured (the baseline's conditions), the
        tool's version and the shard plan, which ``vlcheck merge`` checks shards agree on."""
        from pytest_vlcheck import __version__
        from pytest_vlcheck.gates.conditions import run_conditions

        conditions = run_conditions(self.settings.model_options)
        return RunBlock(
            {"tool_version": __version__, **conditions}, self.shard, dict(self.vqa_answers)
        )

    @property
    def passed(self) -> bool:
        """True when every test passed on every model (a known failure that failed counts as
        passed, as pytest's xfail does) and every checklist collected."""
        return not self.errors and all(passes(result.status) for result in self.results)

    @property
    def regressions(self) -> tuple[CapabilityResult, ...]:
        """The results whose baseline gate found a significant drop (with ``baseline=``)."""
        return tuple(
            r for r in self.results if isinstance(r.gate, GateComparison) and r.gate.regressed
        )

    def of_model(self, name: str) -> tuple[CapabilityResult, ...]:
        """One model's results."""
        return tuple(r for r in self.results if r.model == name)

    def scalars(self) -> dict[str, float]:
        """Loggable numbers: ``vlcheck/<capability>/<test>/pass_rate`` and summaries; with
        several models each model's are prefixed by its name (a checkpoint glob's group)."""
        scalars: dict[str, float] = {}
        for one, _step in self.scalars_per_model():
            scalars.update(one)
        return scalars

    def scalars_per_model(self) -> list[tuple[dict[str, float], int | None]]:
        """Each model's scalars (prefixed when the run has several) with the step to log
        them at: the checkpoint's own step, else the run's."""
        from pytest_vlcheck.loggers import model_scalars, prefixed

        several = len(self.settings.specs) > 1
        logged = []
        for spec in self.settings.specs:
            scalars = model_scalars(list(self.of_model(spec.name)))
            if several:
                scalars = prefixed(spec.group or spec.name, scalars)
            logged.append((scalars, self.step if spec.step is None else spec.step))
        return logged
