"""The ``vl_model`` fixture: capability tests written in Python, in the same matrix as YAML.

``vl_model`` is session-scoped and parametrised over the ``--vl-model`` values, so a test
that asks for it runs once per model (``test_x[MODEL]``) and the model loads once per
process: it is the session's runner, shared with the checklist items. ``evaluate`` judges
examples exactly as a checklist test would and records a row per call; rows travel on the
test's report (``report.vlcheck``, a list) to the matrix, reports, baselines and gates.

A row's key is the test's node id without the model: ``file`` is the test module relative
to the rootdir, ``test`` the rest of the node id (``test_fn``, ``TestX::test_fn[param]``),
plus ``::NAME`` for an ``evaluate(name=NAME)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.items import (
    NO_MODEL_REASON,
    SESSION_KEY,
    VerdictFailure,
    add_capability_marks,
    deciding_status,
)
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.verdict import final, unmeasured
from pytest_vlcheck.vl_tests import (
    CURRENT_KEY,
    FIXTURE,
    ROWS_KEY,
    marked_capability,
    model_of,
    row_key,
    uses_vl_model,
)

if TYPE_CHECKING:  # the model and the engine load when a test asks for ``vl_model``; the
    # plugin registers this module in every pytest run
    from pytest_vlcheck.run.session import VlcheckSession
    from pytest_vlcheck.vl_model import VlModel

UNMEASURED_TASK = "python"
"""The task of a row for a marked test that made no ``evaluate`` call."""


def python_gate_keys(
    state: VlcheckSession, items: Sequence[pytest.Item]
) -> list[tuple[str, str, str]]:
    """(file, test key, model) of every selected ``vl_model`` test, for counting m."""
    keys = []
    for item in items:
        model = model_of(item) if uses_vl_model(item) else None
        if model is not None:
            keys.append((state.relative(item.path), row_key(item, model), model))
    return keys


def python_rows(
    state: VlcheckSession, item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]
) -> list[dict[str, Any]] | None:
    """The rows a ``vl_model`` test sends with its report, and its failure text.

    Each ``evaluate`` call is one row with its own verdict; a marked test that made none has
    one unmeasured row under pytest's verdict. A verdict or a user error replaces the
    traceback, as for checklist items.
    """
    from pytest_vlcheck.report.verdict import verdict_details, verdict_line

    model, status = model_of(item), deciding_status(report)
    if model is None or status is None:
        return None
    if call.excinfo is not None and isinstance(call.excinfo.value, VerdictFailure):
        result = call.excinfo.value.result
        report.longrepr = "\n".join([verdict_line(result), *verdict_details(result)])
    elif call.excinfo is not None and isinstance(call.excinfo.value, VlcheckUserError):
        report.longrepr = call.excinfo.value.render()
    rows = item.stash.get(ROWS_KEY, [])
    capability = marked_capability(item)
    if not rows and capability is not None:
        error = call.excinfo.value if call.excinfo is not None else None
        rows = [final(_unmeasured(state, item, model, capability), outcome=status, error=error)]
    return [row.to_json(with_outcomes=True) for row in rows] or None


def _unmeasured(
    state: VlcheckSession, item: pytest.Item, model: str, capability: str
) -> CapabilityResult:
    from pytest_vlcheck.checklist.schema import ChecklistTest

    test = ChecklistTest(
        id=row_key(item, model),
        capability=capability,
        task=UNMEASURED_TASK,
        threshold=0.0,
        examples=(),
        file=item.path,
        line=(item.reportinfo()[1] or 0) + 1,
    )
    return unmeasured(test, model, "passed", file=state.relative(item.path))


# -- hooks (registered by plugin.py) ------------------------------------------------------


@pytest.fixture(scope="session")
def vl_model(request: pytest.FixtureRequest) -> VlModel:
    """The model under test, once per ``--vl-model`` (skipped when none is given)."""
    model = getattr(request, "param", None)
    if model is None:
        pytest.skip(NO_MODEL_REASON)
    from pytest_vlcheck.vl_model import VlModel

    return VlModel(request.config, model)


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per ``--vl-model`` (the id suffix is the model's name, last, as ``[MODEL]``)."""
    if FIXTURE not in metafunc.fixturenames:
        return
    models = [spec.name for spec in metafunc.config.stash[SESSION_KEY].settings.specs]
    if models:
        metafunc.parametrize(FIXTURE, models, indirect=True, ids=models, scope="session")


def pytest_itemcollected(item: pytest.Item) -> None:
    """``-m``/``-k`` select a marked Python test by capability, as they do YAML tests."""
    capability = marked_capability(item)
    if capability is not None:
        add_capability_marks(item, tuple(capability.split("/")))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Remember which test runs: ``evaluate`` records its rows on it."""
    if uses_vl_model(item):
        item.config.stash[CURRENT_KEY] = item
    try:
        return (yield)
    finally:
        if CURRENT_KEY in item.config.stash:
            del item.config.stash[CURRENT_KEY]
