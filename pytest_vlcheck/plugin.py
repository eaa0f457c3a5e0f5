"""pytest hooks: options, collection of checklist files, result gathering, reports.

Everything of substance lives in the core; these hooks only translate between pytest and it.
Per-item results travel on the test report (``report.vlcheck``) so that the matrix is built
the same way in a serial run and on a pytest-xdist controller.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from pytest_vlcheck import fixture
from pytest_vlcheck.checklist import is_checklist_file
from pytest_vlcheck.engine.embedding_cache import parse_size
from pytest_vlcheck.engine.evaluate import MISSING_POLICIES
from pytest_vlcheck.engine.progress import stderr_writer
from pytest_vlcheck.engine.scoring import ScoringStats
from pytest_vlcheck.gates.baseline import Baseline, baseline_entries, save_baseline
from pytest_vlcheck.gates.conditions import run_conditions
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP, GateSettings
from pytest_vlcheck.gates.wording import unmatched_warning
from pytest_vlcheck.images.loading import set_max_image_pixels
from pytest_vlcheck.items import SESSION_KEY, ChecklistFile, ChecklistItem, NotAChecklist
from pytest_vlcheck.models.protocol import PRECISIONS, ModelOptions
from pytest_vlcheck.models.registry import ModelSpecError, parse_specs
from pytest_vlcheck.report.loader import ReportFormatError
from pytest_vlcheck.results import from_transport
from pytest_vlcheck.run.session import Settings, VlcheckSession
from pytest_vlcheck.run.sharding import Shard, ShardSpecError, assign_shards, parse_shard

STATS_KEY = "vlcheck_stats"
"""The key of the scoring stats in an xdist worker's ``workeroutput``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--vl-*`` options, each with an ini twin."""
    group = parser.getgroup("vlcheck", "vision-language capability checklists")
    _add_run_options(group)
    _add_output_options(group)
    _add_gate_options(group)
    _add_ini_defaults(parser)


def _add_run_options(group: pytest.OptionGroup) -> None:
    """What to run and how to score it."""
    group.addoption(
        "--vl-model",
        action="append",
        default=[],
        metavar="SPEC",
        help="model to test, repeatable: clip, tiny, open_clip:ARCH[@PRETRAINED], "
        "hf:NAME_OR_DIR, scores:FILE, py:MODULE:FACTORY; NAME=SPEC names it",
    )
    group.addoption("--vl-device", default=None, help="auto (cuda, mps, cpu), cpu, cuda:0, ...")
    group.addoption(
        "--vl-batch-size",
        default=None,
        metavar="N",
        help="inputs per forward pass, or auto (the default: 256 on a GPU, halved while it "
        "runs out of memory; 64 elsewhere)",
    )
    group.addoption(
        "--vl-precision",
        choices=PRECISIONS,
        default=None,
        help="forward-pass precision; decisions always use fp32 scores",
    )
    group.addoption(
        "--vl-image-root",
        default=None,
        metavar="DIR",
        help="resolve image paths here instead of each checklist's image_root",
    )
    group.addoption(
        "--vl-threshold",
        type=float,
        default=None,
        metavar="RATE",
        help="override every test's pass-rate threshold (0 to 1)",
    )
    group.addoption(
        "--vl-missing",
        choices=MISSING_POLICIES,
        default=None,
        help="unloadable images: error the test (default) or skip those examples",
    )


def _add_output_options(group: pytest.OptionGroup) -> None:
    """Caches, the bundled suite, the report."""
    group.addoption(
        "--vl-cache-dir",
        default=None,
        metavar="DIR",
        help="root of the embedding cache and of downloaded URL images (default: pytest's "
        "cache dir)",
    )
    group.addoption(
        "--vl-no-cache",
        action="store_true",
        default=None,
        help="encode everything: do not read or write the embedding cache",
    )
    group.addoption(
        "--vl-cache-size",
        default=None,
        metavar="SIZE",
        help="bound on the embedding cache, e.g. 500MB, 2GB (default 2GB); the least "
        "recently used entries are evicted",
    )
    group.addoption(
        "--vl-bundled",
        action="store_true",
        default=False,
        help="also collect the checklists shipped with pytest-vlcheck (only "
        "them when no paths are given)",
    )
    group.addoption(
        "--vl-report",
        default=None,
        metavar="DIR",
        help="write matrix.json, matrix.md, matrix.csv and report.html here",
    )
    group.addoption(
        "--vl-max-image-pixels",
        type=int,
        default=None,
        metavar="N",
        help="decode images up to N pixels (default: Pillow's decompression-bomb limit)",
    )


def _add_gate_options(group: pytest.OptionGroup) -> None:
    """Baselines and gates, language-model priors, CI shards."""
    group.addoption(
        "--vl-baseline",
        default=None,
        metavar="FILE",
        help="gate every test against this baseline: fail on a significant drop",
    )
    group.addoption(
        "--vl-save-baseline",
        default=None,
        metavar="FILE",
        help="merge this run's measured tests into a baseline file (created if absent)",
    )
    group.addoption(
        "--vl-max-drop",
        type=float,
        default=DEFAULT_MAX_DROP,
        metavar="PTS",
        help="a drop must exceed this many points to fail the gate (default 2.0)",
    )
    group.addoption(
        "--vl-alpha",
        type=float,
        default=DEFAULT_ALPHA,
        metavar="A",
        help="significance level of the gate, Bonferroni-corrected over the items gated "
        "(default 0.05)",
    )
    group.addoption(
        "--vl-baseline-model",
        default=None,
        metavar="NAME",
        help="the baseline model every run model is compared with",
    )
    group.addoption(
        "--vl-gate-only",
        action="store_true",
        default=False,
        help="report threshold verdicts but fail items only on gate regressions",
    )
    group.addoption(
        "--vl-prior",
        action="append",
        default=[],
        metavar="SPEC",
        help="a text-only language-model prior, repeatable (perplexities averaged): "
        "hf:NAME_OR_DIR or py:MODULE:FACTORY; adds hard-test accuracy per caption/group test",
    )
    group.addoption(
        "--vl-shard",
        default=None,
        metavar="K/N",
        help="run only job K of N (CI matrices): tests split by example count, "
        "deterministically; merge the report folders with 'vlcheck merge'",
    )


def _add_ini_defaults(parser: pytest.Parser) -> None:
    parser.addini("vl_model", "default --vl-model values", type="linelist", default=[])
    parser.addini("vl_prior", "default --vl-prior values", type="linelist", default=[])
    for name, default in (
        ("vl_device", "auto"),
        ("vl_batch_size", "auto"),
        ("vl_precision", "fp32"),
        ("vl_missing", "error"),
        ("vl_cache_size", "2GB"),
    ):
        parser.addini(name, f"default for --{name.replace('_', '-')}", default=default)
    parser.addini("vl_no_cache", "default for --vl-no-cache", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    """Parse the options into the run's settings (bad values are usage errors)."""
    config.addinivalue_line("markers", "vlcheck: a vision-language checklist test")
    state = VlcheckSession(_settings(config))
    capture = config.pluginmanager.getplugin("capturemanager")
    state.progress = stderr_writer(capture.global_and_fixture_disabled if capture else nullcontext)
    config.stash[SESSION_KEY] = state
    shard = _shard(config)
    config.pluginmanager.register(fixture, "vlcheck-fixture")  # vl_model and its hooks
    if hasattr(config, "workerinput"):  # an xdist worker runs items and sends their rows
        config.pluginmanager.register(ItemHooks(state, shard, plan_ahead=False), "vlcheck-items")
    else:  # a serial run, or the xdist controller (which runs no items)
        config.pluginmanager.register(ItemHooks(state, shard, plan_ahead=True), "vlcheck-items")
        config.pluginmanager.register(ReportHooks(state), "vlcheck-report")
    if config.option.vl_bundled:
        _add_bundled_checklists(config)


def _add_bundled_checklists(config: pytest.Config) -> None:
    """Collect the shipped suite: alone when no paths were given, else beside them."""
    from pytest_vlcheck.checklist.bundled import bundled_checklists_dir

    try:
        directory = str(bundled_checklists_dir())
    except FileNotFoundError as exc:
        raise pytest.UsageError(f"--vl-bundled: {exc}") from None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [directory]
    elif directory not in config.args:
        config.args.append(directory)


def _settings(config: pytest.Config) -> Settings:
    option = config.option
    try:
        specs = tuple(parse_specs(option.vl_model or config.getini("vl_model")))
    except ModelSpecError as exc:
        raise pytest.UsageError(f"--vl-model: {exc}") from None
    precision = option.vl_precision or config.getini("vl_precision")
    missing = option.vl_missing or config.getini("vl_missing")
    batch_size, auto_batch = _batch_size(config)
    for name, value, choices in (
        ("precision", precision, PRECISIONS),
        ("missing", missing, MISSING_POLICIES),
    ):
        if value not in choices:
            raise pytest.UsageError(f"vl_{name} is '{value}'; expected one of {choices}")
    if option.vl_max_image_pixels is not None:
        if option.vl_max_image_pixels < 1:
            raise pytest.UsageError("--vl-max-image-pixels must be at least 1")
        set_max_image_pixels(option.vl_max_image_pixels)
    if option.vl_threshold is not None and not 0 <= option.vl_threshold <= 1:
        raise pytest.UsageError("--vl-threshold must be between 0 and 1")
    return Settings(
        rootdir=config.rootpath,
        gates=_gate_settings(config),
        save_baseline=_save_baseline_path(option.vl_save_baseline),
        priors=_prior_specs(config),
        specs=specs,
        model_options=ModelOptions(
            device=option.vl_device or config.getini("vl_device"),
            batch_size=batch_size,
            precision=precision,
            auto_batch=auto_batch,
        ),
        image_root=Path(option.vl_image_root).resolve() if option.vl_image_root else None,
        threshold=option.vl_threshold,
        missing=missing,
        report_dir=_report_dir(option.vl_report),
        url_cache_dir=_url_cache_dir(config),
        embedding_cache_dir=_embedding_cache_dir(config),
        embedding_cache_bytes=_cache_size(config),
    )


def _prior_specs(config: pytest.Config) -> tuple[str, ...]:
    """``--vl-prior`` values (or the ini's), checked now: a bad spec is a usage error."""
    from pytest_vlcheck.priors import PriorSpecError, parse_prior_spec

    texts = tuple(config.option.vl_prior or config.getini("vl_prior"))
    try:
        for text in texts:
            parse_prior_spec(text)
    except PriorSpecError as exc:
        raise pytest.UsageError(f"--vl-prior: {exc}") from None
    return texts


def _shard(config: pytest.Config) -> Shard | None:
    """``--vl-shard K/N``, or None; a bad value is a usage error."""
    raw = config.option.vl_shard
    if raw is None:
        return None
    try:
        return parse_shard(raw)
    except ShardSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def _embedding_cache_dir(config: pytest.Config) -> Path | None:
    """``--vl-cache-dir`` (the embedding cache sits beside the URL images), else pytest's
    cache dir; None with ``--vl-no-cache``."""
    if config.option.vl_no_cache or config.getini("vl_no_cache"):
        return None
    return _cache_root(config, "embeddings")


def _cache_size(config: pytest.Config) -> int:
    raw, where = config.option.vl_cache_size, "--vl-cache-size"
    if raw is None:
        raw, where = config.getini("vl_cache_size"), "vl_cache_size (ini)"
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _batch_size(config: pytest.Config) -> tuple[int, bool]:
    """``--vl-batch-size`` or the ini value: a number, at least 1 (0 is refused, not
    replaced), or ``auto`` (the CPU default, and backends size it to their device)."""
    raw = config.option.vl_batch_size
    where = "--vl-batch-size"
    if raw is None:
        raw, where = config.getini("vl_batch_size"), "vl_batch_size (ini)"
    if str(raw).strip() == "auto":
        return ModelOptions.batch_size, True
    expected = "expected a whole number >= 1, or auto"
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{where} is '{raw}'; {expected}") from None
    if value < 1:
        raise pytest.UsageError(f"{where} is {value}; {expected}")
    return value, False


def _report_dir(raw: str | None) -> Path | None:
    """The report folder, checked writable now: a bad one is a usage error before scoring."""
    if raw is None:
        return None
    from pytest_vlcheck.report import REPORT_FILES
    from pytest_vlcheck.report.thumbnails import THUMBNAIL_DIR

    folder = Path(raw)
    _check_writable(folder, f"--vl-report {raw}")
    for name in (*REPORT_FILES, "samples.jsonl"):
        if (folder / name).is_dir():
            raise pytest.UsageError(
                f"--vl-report {raw}: {folder / name} is a folder; expected the report file "
                "of that name, or nothing there"
            )
    if (folder / THUMBNAIL_DIR).exists() and not (folder / THUMBNAIL_DIR).is_dir():
        raise pytest.UsageError(
            f"--vl-report {raw}: {folder / THUMBNAIL_DIR} is a file; expected the report's "
            "thumbnail folder, or nothing there"
        )
    return folder


def _save_baseline_path(raw: str | None) -> Path | None:
    """The baseline file a run merges into, checked now (its folder writable, an existing
    file a readable baseline): found at session end, the mistake would cost the whole run."""
    if raw is None:
        return None
    path = Path(raw)
    _check_writable(path.parent, f"--vl-save-baseline {raw}")
    if path.exists():
        try:
            Baseline.load(path)
        except ReportFormatError as exc:
            raise pytest.UsageError(
                f"--vl-save-baseline: {exc}; expected a baseline file to merge into, or a new path"
            ) from None
    return path


def _check_writable(directory: Path, option: str) -> None:
    """Create ``directory`` and write a probe file in it, or raise a one-line usage error."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".vlcheck-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise pytest.UsageError(
            f"{option}: cannot write there ({reason}); expected a writable folder"
        ) from None


def _gate_settings(config: pytest.Config) -> GateSettings:
    """The baseline to gate against (a bad file is a usage error, before any scoring)."""
    option = config.option
    if not 0 < option.vl_alpha < 1:
        raise pytest.UsageError(f"--vl-alpha is {option.vl_alpha}; expected a number in (0, 1)")
    if option.vl_max_drop < 0:
        raise pytest.UsageError(f"--vl-max-drop is {option.vl_max_drop}; expected >= 0 points")
    baseline = None
    if option.vl_baseline:
        try:
            baseline = Baseline.load(option.vl_baseline)
        except ReportFormatError as exc:
            raise pytest.UsageError(f"--vl-baseline: {exc}") from None
        models = sorted({entry.model for entry in baseline.entries})
        if option.vl_baseline_model is not None and option.vl_baseline_model not in models:
            raise pytest.UsageError(
                f"--vl-baseline-model is {option.vl_baseline_model!r}, which "
                f"{option.vl_baseline} does not hold; expected one of: {', '.join(models)}"
            )
    return GateSettings(
        baseline=baseline,
        baseline_model=option.vl_baseline_model,
        max_drop_pts=option.vl_max_drop,
        alpha=option.vl_alpha,
        gate_only=option.vl_gate_only,
    )


def _url_cache_dir(config: pytest.Config) -> Path:
    return _cache_root(config, "images")


def _cache_root(config: pytest.Config, kind: str) -> Path:
    """``--vl-cache-dir`` (the root for every cache), else a ``kind`` folder in pytest's cache
    dir, else one under the rootdir when the cache plugin is off."""
    if config.option.vl_cache_dir:
        return Path(config.option.vl_cache_dir).resolve()
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir(f"vlcheck-{kind}"))
    return config.rootpath / ".vlcheck_cache" / kind


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """YAML files opening with a ``vlcheck:`` key are checklists; a YAML file named on the
    command line that is not one says why, instead of pytest's bare "not found"."""
    if is_checklist_file(file_path):
        return ChecklistFile.from_parent(parent, path=file_path)
    if file_path.suffix in (".yaml", ".yml") and _named_on_command_line(parent.config, file_path):
        return NotAChecklist.from_parent(parent, path=file_path)
    return None


def _named_on_command_line(config: pytest.Config, path: Path) -> bool:
    named = {Path(arg.split("::")[0]).resolve() for arg in config.args}
    return path.resolve() in named


class ItemHooks:
    """Where items run (a serial run or an xdist worker): plan, score, attach each result."""

    def __init__(
        self, state: VlcheckSession, shard: Shard | None = None, *, plan_ahead: bool
    ) -> None:
        self.state = state
        self.shard = shard
        self.shard_empty = False
        self.plan_ahead = plan_ahead

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Count m over the whole selection (after ``-k``/``-m``), then keep this shard's
        items: every shard gates each item as the serial run would."""
        self.state.count_gated(_model_items(items))
        self.state.count_python_gated(fixture.python_gate_keys(self.state, items))
        if self.shard is None:
            return
        groups = {id(item): self._shard_group(item) for item in items}
        weights: dict[tuple[str, str], int] = {}
        for item in items:
            group = groups[id(item)]
            size = len(item.test.examples) if isinstance(item, ChecklistItem) else 1
            weights[group] = weights.get(group, 0) + size
        assignment = assign_shards(weights, self.shard.count)
        keep = [item for item in items if assignment[groups[id(item)]] == self.shard.index]
        if len(keep) < len(items):
            kept = {id(item) for item in keep}
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
            items[:] = keep
            self.shard_empty = not keep

    def _shard_group(self, item: pytest.Item) -> tuple[str, str]:
        """A checklist test with all its models, or a test function with all its params;
        named relative to the rootdir, so jobs on other machines agree."""
        if isinstance(item, ChecklistItem):
            return (self.state.relative(item.test.file), item.test.id)
        return ("", item.nodeid.split("[", 1)[0])

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Plan each model's work from the selected items: a serial run scores it in one pass.

        An xdist worker collects every item but runs only some: it scores per item instead.
        """
        if not self.plan_ahead:
            return
        planned: dict[str, dict[int, Any]] = {}
        for test, model in _model_items(session.items):
            planned.setdefault(model, {})[id(test)] = test
        for model, tests in planned.items():
            self.state.plan(model, list(tests.values()))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Close the embedding cache; send an xdist worker's scoring stats to the controller
        (which sums them); a shard left with nothing to run (more jobs than tests) is not a
        failed CI job."""
        self.state.close()
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[STATS_KEY] = {
                name: dataclasses.asdict(runner.stats)
                for name, runner in self.state.runners.items()
            }
        if self.shard_empty and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Attach the item's result to the report that decides its verdict (the transport to
        an xdist controller is this JSON)."""
        report = yield
        if (
            isinstance(item, ChecklistItem)
            and item.model is not None
            and (report.when == "call" or (report.when == "setup" and not report.passed))
        ):
            status = "error" if report.when == "setup" and report.failed else report.outcome
            message = ""
            if report.when == "setup" and call.excinfo is not None:
                message = str(call.excinfo.value).splitlines()[0]
            report.vlcheck = item.outcome(status, message).to_json(with_outcomes=True)
        elif fixture.uses_vl_model(item):
            rows = fixture.python_rows(self.state, item, report, call)
            if rows is not None:
                report.vlcheck = rows
        return report


def _model_items(items: list[pytest.Item]) -> list[tuple[Any, str]]:
    """(test, model) of every checklist item that has a model."""
    return [
        (item.test, item.model)
        for item in items
        if isinstance(item, ChecklistItem) and item.model is not None
    ]


NOTHING_COLLECTED = (
    "vlcheck: no checklist was collected. A checklist is a .yaml or .yml file whose first key "
    "is 'vlcheck: 1' (then 'tests:'); pass its file or folder to pytest, or --vl-bundled for "
    "the shipped suite ('vlcheck validate PATH' says why a file is not one)."
)


class ReportHooks:
    """Where results gather (a serial run or the xdist controller): matrix and report files."""

    def __init__(self, state: VlcheckSession) -> None:
        self.state = state
        self.worker_stats: dict[str, ScoringStats] = {}
        self.user_interrupt = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Sum the stats each xdist worker sent, per model, for the controller's stats line."""
        for name, stats in getattr(node, "workeroutput", {}).get(STATS_KEY, {}).items():
            total = dataclasses.asdict(self.worker_stats.get(name, ScoringStats()))
            for key, value in stats.items():
                total[key] += value
            self.worker_stats[name] = ScoringStats(**total)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Tell Ctrl-C apart from pytest stopping after collection errors (both interrupt)."""
        self.user_interrupt = not isinstance(excinfo.value, pytest.Session.Interrupted)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather results (on an xdist controller they arrive from the workers)."""
        row = getattr(report, "vlcheck", None)
        for one in [row] if isinstance(row, dict) else row or []:  # a list: a Python test's
            self.state.record(from_transport(one))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Keep a failed collection's message for the report files (never a silent report)."""
        if report.failed:
            path = report.nodeid.split("::")[0] or str(report.fspath)
            self.state.record_collection_error(path, report.longreprtext)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        """Print the capability matrix (capability rows x model columns); a run that collected
        nothing says how checklists are recognised."""
        # (items that -k or -m deselected were collected: their checklists were recognised)
        deselected = terminalreporter.stats.get("deselected")
        nothing = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not deselected
        if nothing and self.state.settings.specs:
            terminalreporter.write_line(NOTHING_COLLECTED)
        if not self.state.results:
            return
        from pytest_vlcheck.report import build_report, matrix_lines

        terminalreporter.write_sep("=", "vlcheck capability matrix")
        width = shutil.get_terminal_size((100, 20)).columns
        rows = [r.to_json() for r in self.state.ordered()]
        report = build_report(self.state.models_meta(), rows, self.state.collection_errors)
        for segments in matrix_lines(report, width=width):
            for text, colour in segments:
                terminalreporter.write(text, **({colour: True} if colour else {}))
            terminalreporter.line("")
        stats_by_model = self.worker_stats or {n: r.stats for n, r in self.state.runners.items()}
        for name, stats in stats_by_model.items():
            if stats.model_calls or stats.cached:
                terminalreporter.write_line(
                    f"[{name}] {stats.images_encoded} images, {stats.texts_encoded} texts, "
                    f"{stats.pairs_scored} pairs in {stats.model_calls} model calls, "
                    f"{stats.cached} cached; "
                    f"{stats.model_seconds:.1f} s in the model, {stats.load_seconds:.1f} s "
                    f"waiting for images"
                )
        unmatched = unmatched_warning(
            self.state.results, self.state.settings.gates, terminalreporter.config.rootpath
        )
        if unmatched is not None:
            terminalreporter.write_line(unmatched, yellow=True, bold=True)
        if self.state.settings.report_dir is not None:
            terminalreporter.write_line(
                f"vlcheck report written to {self.state.settings.report_dir}"
            )

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the report files and the baseline, atomically; an interrupted run writes
        nothing, so the previous files stay as they were, and so does a run that measures
        nothing (``--collect-only``, a ``-k`` that selects nothing; an empty CI shard still
        writes its empty report for ``vlcheck merge``). A run stopped by collection errors
        writes a report that records them (and no baseline)."""
        stopped_by_errors = bool(self.state.collection_errors) and not self.user_interrupt
        if exitstatus == pytest.ExitCode.INTERRUPTED and not stopped_by_errors:
            return
        options = session.config.option
        nothing_selected = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not options.vl_shard
        if options.collectonly or (nothing_selected and not stopped_by_errors):
            return
        settings = self.state.settings
        results = self.state.ordered()
        if settings.report_dir is not None:
            from pytest_vlcheck.report import write_report
            from pytest_vlcheck.results.samples import sample_rows, write_samples

            rows = [r.to_json() for r in results]
            errors = self.state.collection_errors
            write_report(settings.report_dir, self.state.models_meta(), rows, errors=errors)
            write_samples(settings.report_dir / "samples.jsonl", sample_rows(results))
        if settings.save_baseline is not None and exitstatus != pytest.ExitCode.INTERRUPTED:
            from pytest_vlcheck.gates.baseline import git_commit

            specs = {spec.name: spec.text for spec in settings.specs}
            conditions = run_conditions(settings.model_options)
            commit = git_commit(session.config.rootpath)
            entries = baseline_entries(results, specs, conditions, commit)
            save_baseline(settings.save_baseline, entries)
