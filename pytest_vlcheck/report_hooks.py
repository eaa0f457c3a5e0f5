"""The pytest hooks where results gather (a serial run or the xdist controller): the rows
items send, the stats xdist workers send, the terminal matrix and the report files.

The plugin registers ``ReportHooks`` where no items run beside it; ``plugin.py`` keeps the
hooks that set a run up and run its items.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from pytest_vlcheck.interrupts import trim_interrupt
from pytest_vlcheck.model_required import WORKER_KEY, stop_as_usage_error
from pytest_vlcheck.results import from_transport
from pytest_vlcheck.run.session import VlcheckSession
from pytest_vlcheck.run.sinks import LoggingFailed, TerminalMatrix, emit_all, file_sinks

STATS_KEY = "vlcheck_stats"
"""The key of the scoring stats and shard plan in an xdist worker's ``workeroutput``."""

NOTHING_COLLECTED = (
    "vlcheck: no checklist was collected. A checklist is a .yaml or .yml file whose first key "
    "is 'vlcheck: 1' (then 'tests:'); pass its file or folder to pytest, or --vl-bundled for "
    "the shipped suite ('vlcheck validate PATH' says why a file is not one)."
)


class ReportHooks:
    """Where results gather (a serial run or the xdist controller): matrix and report files."""

    def __init__(self, state: VlcheckSession) -> None:
        self.state = state
        self.user_interrupt = False
        self.logging_failed = ""
        self.no_model: str | None = None  # an xdist worker's "no model given"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Sum the stats each xdist worker sent, per model, for the controller's stats line."""
        output = getattr(node, "workeroutput", {})
        self.state.add_worker_output(output.get(STATS_KEY, {}))
        self.state.worker_answers.update(output.get(STATS_KEY, {}).get("vqa_answers", {}))
        self.no_model = self.no_model or output.get(WORKER_KEY)

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C, or pytest stopping after collection errors? Keep the report short."""
        self.user_interrupt = not isinstance(excinfo.value, pytest.Session.Interrupted)
        trim_interrupt(excinfo)

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
        """Print the capability matrix; a run that collected nothing says how checklists are
        recognised (items that -k or -m deselected were collected: they were recognised)."""
        if exitstatus == pytest.ExitCode.USAGE_ERROR or self.no_model:  # one line, no matrix
            return
        deselected = terminalreporter.stats.get("deselected")
        nothing = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not deselected
        if nothing and self.state.settings.specs:
            terminalreporter.write_line(NOTHING_COLLECTED)
        width = shutil.get_terminal_size((100, 20)).columns
        saved = exitstatus != pytest.ExitCode.INTERRUPTED  # else no baseline was written
        TerminalMatrix(terminalreporter, width, saved).emit(self.state.finished())
        if self.logging_failed:
            terminalreporter.write_line(self.logging_failed, red=True, bold=True)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the report files and the baseline, atomically; an interrupted run writes
        nothing, so the previous files stay as they were, and so does a run that measures
        nothing (``--collect-only``, a ``-k`` that selects nothing; an empty CI shard still
        writes its empty report for ``vlcheck merge``). A run stopped by collection errors
        writes a report that records them (and no baseline)."""
        if self.no_model:
            stop_as_usage_error(session, self.no_model)
            return
        stopped_by_errors = bool(self.state.collection_errors) and not self.user_interrupt
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        options = session.config.option
        nothing_selected = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not options.vl_shard
        if options.collectonly or exitstatus == pytest.ExitCode.USAGE_ERROR:
            return
        if (interrupted or nothing_selected) and not stopped_by_errors:
            return
        run = self.state.finished()
        try:
            emit_all(run, file_sinks(run, baseline=not interrupted))
        except LoggingFailed as exc:  # printed under the matrix, which comes after this hook
            self.logging_failed = str(exc)
