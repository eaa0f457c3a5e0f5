"""What makes a Python test a vlcheck test, shared by the ``vl_model`` fixture's hooks
(``fixture``) and the object it gives tests (``vl_model``): it asks for the fixture, runs on one
model, records its rows under a key, and may carry ``@pytest.mark.vlcheck(capability=...)``.
"""

from __future__ import annotations

import pytest

from pytest_vlcheck.results import CapabilityResult

FIXTURE = "vl_model"
ROWS_KEY = pytest.StashKey[list[CapabilityResult]]()
CURRENT_KEY = pytest.StashKey[pytest.Item]()
"""The test being run on this process (what ``evaluate`` records its rows on)."""


def marked_capability(item: pytest.Item) -> str | None:
    """The capability of a ``@pytest.mark.vlcheck(capability=...)`` on the test."""
    mark = item.get_closest_marker("vlcheck")
    capability = mark.kwargs.get("capability") if mark is not None else None
    return capability if isinstance(capability, str) and capability else None


def model_of(item: pytest.Item) -> str | None:
    """The model a ``vl_model`` test runs on (None when no model was given)."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(FIXTURE) if callspec is not None else None


def row_key(item: pytest.Item, model: str) -> str:
    """The node id without the file and the model: ``test_fn``, ``TestX::test_fn[3]``."""
    name = item.nodeid.split("::", 1)[1]
    for suffix, keep in ((f"[{model}]", ""), (f"-{model}]", "]")):
        if name.endswith(suffix):
            return name[: -len(suffix)] + keep
    return name


def uses_vl_model(item: pytest.Item) -> bool:
    """Whether the item is a Python test that asks for ``vl_model``."""
    return FIXTURE in getattr(item, "fixturenames", ())
