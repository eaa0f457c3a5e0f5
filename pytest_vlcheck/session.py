"""The state of one vlcheck run: settings, one runner per model, and the results gathered.

Kept free of pytest so the ``vlcheck`` command and Python callers can drive the same flow; the
plugin stores one ``VlcheckSession`` in the pytest config's stash.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.engine import ModelRunner, evaluate_test
from pytest_vlcheck.engine.embedding_cache import DEFAULT_MAX_BYTES, EmbeddingCache
from pytest_vlcheck.engine.evaluate import MissingPolicy
from pytest_vlcheck.engine.progress import Writer
from pytest_vlcheck.gating import GateSettings, apply_gate, entry_of, run_conditions
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import ModelSpec
from pytest_vlcheck.results import CapabilityResult


@dataclass(frozen=True)
class Settings:
    """The run's options, as parsed from the command line and ini file."""

    specs: tuple[ModelSpec, ...] = ()
    model_options: ModelOptions = field(default_factory=ModelOptions)
    image_root: Path | None = None
    threshold: float | None = None
    missing: MissingPolicy = "error"
    report_dir: Path | None = None
    url_cache_dir: Path | None = None
    rootdir: Path | None = None
    gates: GateSettings = field(default_factory=GateSettings)
    save_baseline: Path | None = None
    embedding_cache_dir: Path | None = None
    """Root of the embedding cache (``--vl-cache-dir``); None turns it off (``--vl-no-cache``)."""
    embedding_cache_bytes: int = DEFAULT_MAX_BYTES


@dataclass
class VlcheckSession:
    """Runners per model, the tests planned for each, and every result seen."""

    settings: Settings
    runners: dict[str, ModelRunner] = field(default_factory=dict)
    planned: dict[str, list[ChecklistTest]] = field(default_factory=dict)
    results: list[CapabilityResult] = field(default_factory=list)
    gated: int = 0
    load_failures: dict[str, str] = field(default_factory=dict)
    progress: Writer | None = None
    """Where runners draw their progress line (None: silent)."""
    _cache: EmbeddingCache | None = None
    """Per model that failed to load, the node id whose error explains why."""
    """m: how many test x model items of the whole selection have a baseline entry."""

    def runner(self, model: str) -> ModelRunner:
        """The model's runner, made on first use (the model itself loads on first scoring)."""
        if model not in self.runners:
            spec = next(s for s in self.settings.specs if s.name == model)
            loader = ImageLoader(self.settings.url_cache_dir)
            self.runners[model] = ModelRunner(
                spec,
                self.settings.model_options,
                loader,
                cache=self.embedding_cache(),
                progress=self.progress,
            )
        return self.runners[model]

    def embedding_cache(self) -> EmbeddingCache | None:
        """The run's embedding cache, opened on first use and shared by every model."""
        root = self.settings.embedding_cache_dir
        if self._cache is None and root is not None:
            self._cache = EmbeddingCache(root, max_bytes=self.settings.embedding_cache_bytes)
        return self._cache

    def plan(self, model: str, tests: list[ChecklistTest]) -> None:
        """Tests to score together, in one batched pass, when the model's first item runs."""
        self.planned[model] = tests

    def evaluate(self, test: ChecklistTest, model: str) -> CapabilityResult:
        """Judge one test on one model.

        The model's first test scores the whole plan in one batched pass; a test outside the
        plan (an xdist worker scores only the items it runs) is scored on its own.
        """
        runner = self.runner(model)
        runner.prepare(self.planned.pop(model, None) or [test])
        result = evaluate_test(
            test, runner, threshold=self.settings.threshold, missing=self.settings.missing
        )
        result = replace(result, file=self.relative(test.file), content_hash=test.content_hash)
        conditions = run_conditions(self.settings.model_options)
        return apply_gate(result, self.settings.gates, m=self.gated, conditions=conditions)

    def relative(self, path: Path) -> str:
        """A checklist path as every report writes it: relative to pytest's rootdir (POSIX),
        so baseline keys match across checkouts and machines."""
        root = self.settings.rootdir
        if root is not None and path.is_absolute() and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
        return path.as_posix()

    def count_gated(self, items: list[tuple[ChecklistTest, str]]) -> None:
        """Count m over the whole selection (before any sharding or xdist split)."""
        gates = self.settings.gates
        self.gated = sum(
            1
            for test, model in items
            if entry_of(gates, self.relative(test.file), test.id, model) is not None
        )

    def record(self, result: CapabilityResult) -> None:
        """Keep a result for the matrix and the report files."""
        self.results.append(result)

    def ordered(self) -> list[CapabilityResult]:
        """Results in file, line and ``--vl-model`` order, however xdist delivered them."""
        order = {spec.name: index for index, spec in enumerate(self.settings.specs)}
        return sorted(self.results, key=lambda r: (r.file, r.line, order.get(r.model, len(order))))

    def models_meta(self) -> list[dict[str, str]]:
        """``matrix.json``'s models: name, spec and fingerprint, in ``--vl-model`` order."""
        fingerprints: dict[str, str] = {}
        for result in self.results:
            if result.fingerprint:
                fingerprints.setdefault(result.model, result.fingerprint)
        return [
            {"name": s.name, "spec": s.text, "fingerprint": fingerprints.get(s.name, "")}
            for s in self.settings.specs
        ]
