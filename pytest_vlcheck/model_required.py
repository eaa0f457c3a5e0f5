"""No model, no green: a pytest run that would execute checklist items or ``vl_model`` tests
without a model is a usage error, so a CI job that forgot ``--vl-model`` cannot pass.

The check runs once the selection is final (after ``-k``, ``-m`` and ``--vl-shard``): a
``--collect-only`` run, a shard left with nothing and a selection that keeps no such item
are not runs of untested items. ``--vl-allow-no-model`` (ini ``vl_allow_no_model``) is the
documented way back to skipped items, for a suite that must also pass where no model is.
A baseline that gates none of the selected items stops the run the same way
(``gate_required``). A model that fails to load while the run scores is its own exit status,
``MODEL_NOT_LOADED``, with one line per such model: not "tests failed".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import pytest

from pytest_vlcheck import gate_required
from pytest_vlcheck.items import ChecklistItem
from pytest_vlcheck.vl_tests import uses_vl_model

OPT_OUT = "--vl-allow-no-model"
INI_OPT_OUT = "vl_allow_no_model"


def add_ini(parser: pytest.Parser) -> None:
    """The ini twins of ``--vl-allow-no-model`` and ``--vl-allow-no-gate`` (the options
    themselves are in ``run.options``)."""
    flag: Literal["bool"] = "bool"  # a string: the older pytest versions take no type object
    parser.addini(INI_OPT_OUT, f"default for {OPT_OUT}", type=flag, default=False)
    gate_required.add_ini(parser)


def needs_a_model(item: pytest.Item) -> bool:
    """A checklist item or a test that asks for the ``vl_model`` fixture."""
    return isinstance(item, ChecklistItem) or uses_vl_model(item)


MODEL_NOT_LOADED = 10
"""The exit status of a run in which a model failed to load (its items errored, none was
measured): a broken model or environment, not a capability that failed. Clear of pytest's
own statuses (0-6 in pytest 9: 6 is ``MAX_WARNINGS_ERROR``)."""

WORKER_KEY = "vlcheck_no_model"
"""Where an xdist worker leaves the message for the controller, which alone can stop the run
(a usage error raised on a worker would crash it)."""


def check_models_given(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop a run whose ``items`` would run untested for want of a model, or ungated for
    want of a matching baseline: pytest's usage error; on an xdist worker, no item is run and
    the controller is told."""
    problem = missing_model_problem(config, items) or gate_required.no_gate_problem(config, items)
    if problem is None:
        return
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is None:
        raise pytest.UsageError(problem)
    workeroutput[WORKER_KEY] = problem
    items.clear()


def stop_as_usage_error(session: pytest.Session, problem: str) -> None:
    """The xdist controller's side: the worker's message, and pytest's usage-error status."""
    session.config.get_terminal_writer().line(f"ERROR: {problem}", red=True)
    session.exitstatus = pytest.ExitCode.USAGE_ERROR


def missing_model_problem(config: pytest.Config, items: Sequence[pytest.Item]) -> str | None:
    """The one-line message when ``items`` hold tests that need a model and none is given,
    or when a model is given to a run whose paths came from ``testpaths`` and hold nothing
    that uses it (``pytest --vl-model=tiny`` in a clone of this repository)."""
    if config.option.collectonly:
        return None
    if config.option.vl_model or config.getini("vl_model"):
        return _unused_model_problem(config, items)
    if config.option.vl_allow_no_model or config.getini(INI_OPT_OUT):
        return None
    count = sum(needs_a_model(item) for item in items)
    if not count:
        return None
    return (
        f"no model given, so {count} checklist or vl_model test{'s' * (count != 1)} would "
        "run untested: pass --vl-model SPEC (e.g. --vl-model=tiny, the model shipped with "
        "pytest-vlcheck; clip, open_clip:CONFIG@WEIGHTS, hf:DIR, scores:FILE, "
        f"py:MODULE:FACTORY) or set vl_model in the ini file; {OPT_OUT} skips them instead"
    )


def _unused_model_problem(config: pytest.Config, items: Sequence[pytest.Item]) -> str | None:
    from_ini = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    selecting = config.option.keyword or config.option.markexpr
    if not from_ini or selecting or not items or any(needs_a_model(item) for item in items):
        return None
    paths = " ".join(config.getini("testpaths"))
    return (
        f"a model is given but pytest took its paths from the ini file's testpaths ({paths}), "
        "which hold no checklist or vl_model test; expected the checklists' paths, e.g. "
        "pytest checklists --vl-model=tiny, or --vl-bundled for the shipped suite"
    )


def settle_exit_status(
    session: pytest.Session, shard_empty: bool, load_failures: Mapping[str, str]
) -> None:
    """vlcheck's word on pytest's status: a shard left with nothing to run (more jobs than
    tests) is not a failed CI job; a run in which a model failed to load (``load_failures``:
    the model and the item whose error says why) exits ``MODEL_NOT_LOADED`` and says so in
    one line per model (an xdist worker leaves that to the controller)."""
    if shard_empty and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
    if not load_failures or session.exitstatus != pytest.ExitCode.TESTS_FAILED:
        return
    session.exitstatus = MODEL_NOT_LOADED
    if getattr(session.config, "workeroutput", None) is not None:
        return
    writer = session.config.get_terminal_writer()
    if writer.width_of_current_line:  # after pytest's progress dots
        writer.line()
    for model, nodeid in sorted(load_failures.items()):
        writer.line(
            f"vlcheck: model '{model}' failed to load, so its items errored (the first, "
            f"{nodeid}, says why): exit status {MODEL_NOT_LOADED}",
            red=True,
        )
