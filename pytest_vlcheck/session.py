"""The state of one vlcheck run: settings, one runner per model, and the results gathered.

Kept free of pytest so the ``vlcheck`` command and Python callers can drive the same flow; the
plugin stores one ``VlcheckSession`` in the pytest config's stash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.engine import ModelRunner, evaluate_test
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions, scorer_fingerprint
from pytest_vlcheck.models.registry import ModelSpec
from pytest_vlcheck.results import TestResult


@dataclass(frozen=True)
class Settings:
    """The run's options, as parsed from the command line and ini file."""

    specs: tuple[ModelSpec, ...] = ()
    model_options: ModelOptions = field(default_factory=ModelOptions)
    image_root: Path | None = None
    threshold: float | None = None
    missing: str = "error"
    report_dir: Path | None = None
    url_cache_dir: Path | None = None


@dataclass
class VlcheckSession:
    """Runners per model, the tests planned for each, and every result seen."""

    settings: Settings
    runners: dict[str, ModelRunner] = field(default_factory=dict)
    planned: dict[str, list[ChecklistTest]] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)

    def runner(self, model: str) -> ModelRunner:
        """The model's runner, made on first use (the model itself loads on first scoring)."""
        if model not in self.runners:
            spec = next(s for s in self.settings.specs if s.name == model)
            loader = ImageLoader(self.settings.url_cache_dir)
            self.runners[model] = ModelRunner(spec, self.settings.model_options, loader)
        return self.runners[model]

    def plan(self, model: str, tests: list[ChecklistTest]) -> None:
        """Tests to score together, in one batched pass, when the model's first item runs."""
        self.planned[model] = tests

    def evaluate(self, test: ChecklistTest, model: str) -> TestResult:
        """Judge one test on one model; the first call for a model scores its whole plan."""
        runner = self.runner(model)
        planned = self.planned.pop(model, None)
        if planned:
            runner.prepare(planned)
        result = evaluate_test(
            test, runner, threshold=self.settings.threshold, missing=self.settings.missing
        )
        self.fingerprints[model] = scorer_fingerprint(runner.scorer)
        return result

    def models_meta(self) -> list[dict[str, str]]:
        """``matrix.json``'s models: name, spec and fingerprint, in ``--vl-model`` order."""
        return [
            {"name": s.name, "spec": s.text, "fingerprint": self.fingerprints.get(s.name, "")}
            for s in self.settings.specs
        ]
