"""pytest hooks: options, collection of checklist files, running items (``report_hooks``
gathers results and writes reports).

Everything of substance lives in the core; these hooks only translate between pytest and it.
Per-item results travel on the test report (``report.vlcheck``) so that the matrix is built
the same way in a serial run and on a pytest-xdist controller.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from pytest_vlcheck import fixture
from pytest_vlcheck.engine.runner.progress import stderr_writer
from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.interrupts import freeze_collected, thaw_earlier_session
from pytest_vlcheck.items import SESSION_KEY, ChecklistFile, ChecklistItem, NotAChecklist
from pytest_vlcheck.model_required import (
    add_ini,
    check_models_given,
    settle_exit_status,
)
from pytest_vlcheck.pytest_options import PytestOptions
from pytest_vlcheck.report_hooks import STATS_KEY, ReportHooks
from pytest_vlcheck.run.options import COMMAND_LINE_OPTIONS, INI_TWINS
from pytest_vlcheck.run.session import VlcheckSession
from pytest_vlcheck.run.settings import DEFAULTS, build_settings
from pytest_vlcheck.run.sharding import Shard, ShardSpecError, plan_shard, shard_option
from pytest_vlcheck.vl_tests import uses_vl_model

# Every module imported above is light (no numpy, no model, no report): pytest imports this
# plugin in every run, with checklists or not (benchmarks/fixed_costs.py).


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--vl-*`` options (``run.options``), and the ini twins of some."""
    group = parser.getgroup("vlcheck", "vision-language capability checklists")
    for flag, keywords in COMMAND_LINE_OPTIONS:
        group.addoption(flag, **keywords)
    for key, kind in INI_TWINS:
        option = "--vl-" + key.replace("_", "-")
        help_text = f"default {option} values" if kind == "linelist" else f"default for {option}"
        parser.addini(f"vl_{key}", help_text, type=kind, default=_ini_default(key))
    add_ini(parser)


def _ini_default(key: str) -> Any:
    """The option's default, as the ini parser holds it (a list for a line list)."""
    default = DEFAULTS[key]
    return list(default) if isinstance(default, tuple) else default


def pytest_configure(config: pytest.Config) -> None:
    """Parse the options into the run's settings (bad values are usage errors)."""
    thaw_earlier_session()
    config.addinivalue_line("markers", "vlcheck: a vision-language checklist test")
    try:
        state = VlcheckSession(build_settings(PytestOptions(config)))
        shard = shard_option(config.option.vl_shard)  # K/N, or auto: a job array's
    except (SettingsError, ShardSpecError) as exc:
        raise pytest.UsageError(str(exc)) from None
    capture = config.pluginmanager.getplugin("capturemanager")
    state.progress = stderr_writer(capture.global_and_fixture_disabled if capture else nullcontext)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(fixture, "vlcheck-fixture")  # vl_model and its hooks
    plan_ahead = not hasattr(config, "workerinput")  # an xdist worker runs items, sends rows
    config.pluginmanager.register(ItemHooks(state, shard, plan_ahead=plan_ahead), "vlcheck-items")
    if plan_ahead:  # a serial run, or the xdist controller (which runs no items)
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


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """YAML files opening with a ``vlcheck:`` key are checklists; a YAML file named on the
    command line that is not one says why, instead of pytest's bare "not found"."""
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    from pytest_vlcheck.parsing.yaml_lines import checklist_header_problem  # PyYAML: YAML only

    if checklist_header_problem(file_path) is None:
        return ChecklistFile.from_parent(parent, path=file_path)
    if _named_on_command_line(parent.config, file_path):
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

    def pytest_report_header(self) -> str | None:
        """``--vl-shard=auto`` says which job of which scheduler's array this run is."""
        return None if self.shard is None else self.shard.header()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Count m over the whole selection (after ``-k``/``-m``), then keep this shard's
        items (every shard gates each item as the serial run would); items to run with no
        model are a usage error."""
        self.state.count_gated(_model_items(items))
        self.state.count_python_gated(fixture.python_gate_keys(self.state, items))
        if self.shard is not None:
            self._keep_shard(config, items, self.shard)
        check_models_given(config, items)

    def _keep_shard(self, config: pytest.Config, items: list[pytest.Item], shard: Shard) -> None:
        """Deselect the items of other jobs."""
        groups = [(self._shard_group(i), _size(i)) for i in items]
        runs, self.state.shard_plan = plan_shard(groups, shard)
        keep = [item for item, kept in zip(items, runs, strict=True) if kept]
        if len(keep) < len(items):
            kept_ids = {id(item) for item in keep}
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept_ids])
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
        freeze_collected()
        if not self.plan_ahead:
            return
        planned: dict[str, dict[int, Any]] = {}
        for test, model in _model_items(session.items):
            planned.setdefault(model, {})[id(test)] = test
        for model, tests in planned.items():
            self.state.plan(model, list(tests.values()))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Close the embedding cache; send an xdist worker's scoring stats to the controller
        (which sums them); settle the exit status (an empty shard, a model that failed to
        load: ``model_required``)."""
        self.state.close()
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[STATS_KEY] = self.state.worker_output()
        settle_exit_status(session, self.shard_empty, self.state.load_failures)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Attach the item's result to the report that decides its verdict (the transport to
        an xdist controller is this JSON)."""
        report = yield
        rows: dict[str, Any] | list[dict[str, Any]] | None = None
        if isinstance(item, ChecklistItem):
            rows = item.transport(report, call)
        elif uses_vl_model(item):
            rows = fixture.python_rows(self.state, item, report, call)
        if rows is not None:
            report.vlcheck = rows
        return report


def _size(item: pytest.Item) -> int:
    """An item's shard weight: a checklist test's example count, a Python test's 1."""
    return len(item.test.examples) if isinstance(item, ChecklistItem) else 1


def _model_items(items: list[pytest.Item]) -> list[tuple[Any, str]]:
    """(test, model) of every checklist item that has a model."""
    return [
        (item.test, item.model)
        for item in items
        if isinstance(item, ChecklistItem) and item.model is not None
    ]
