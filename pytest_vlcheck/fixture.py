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

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from pytest_vlcheck.checklist.python_tests import PixelStore, build_test, image_refs, is_pil
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.engine import MissingImagesError, Unscorable, unscored_result
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.items import (
    NO_MODEL_REASON,
    SESSION_KEY,
    VerdictFailure,
    add_capability_marks,
    result_properties,
)
from pytest_vlcheck.parsing.example_fields import ParseContext
from pytest_vlcheck.report.verdict import verdict_details, verdict_line
from pytest_vlcheck.results import CapabilityResult

if TYPE_CHECKING:
    from pytest_vlcheck.engine import ModelRunner
    from pytest_vlcheck.run.session import VlcheckSession

FIXTURE = "vl_model"
ROWS_KEY = pytest.StashKey[list[CapabilityResult]]()
CURRENT_KEY = pytest.StashKey[pytest.Item]()
"""The test being run on this process (what ``evaluate`` records its rows on)."""
UNMEASURED_TASK = "python"
"""The task of a row for a marked test that made no ``evaluate`` call."""


class VlModel:
    """One model for Python tests: scores through the session's runner, and ``evaluate``."""

    def __init__(self, config: pytest.Config, model: str) -> None:
        self.config = config
        self.name = model

    @property
    def _state(self) -> VlcheckSession:
        return self.config.stash[SESSION_KEY]

    @property
    def runner(self) -> ModelRunner:
        """The session's runner for this model (loads the model on first scoring)."""
        return self._state.runner(self.name)

    @property
    def fingerprint(self) -> str:
        """The loaded weights' fingerprint."""
        return self.runner.fingerprint

    def score(self, images: Any, texts: Any, example_id: str | None = None) -> np.ndarray:
        """The fp32 scores of every image x text (rows: images, columns: texts).

        ``example_id`` is what a ``scores:`` file's ``"example"`` lines match.
        """
        __tracebackhide__ = True
        texts_list = self._texts(texts, "score")
        refs = self._refs(images, "score")
        grid = (tuple(refs), tuple(texts_list))
        self.runner.refresh()
        self.runner.prepare_grids([grid])
        scores = self.runner.grid(grid, example_id or "")
        if isinstance(scores, Unscorable):
            raise self._unavailable(scores)
        return scores

    def encode_images(self, images: Any) -> np.ndarray:
        """Unit-norm image embeddings [images, dim] (float64: their dot products rounded to
        fp32 are ``score``'s values); a dual encoder only."""
        __tracebackhide__ = True
        refs = self._refs(images, "encode_images")
        self.runner.refresh()
        vectors = self.runner.image_vectors(refs)
        if isinstance(vectors, Unscorable):
            raise self._unavailable(vectors)
        return vectors

    def encode_texts(self, texts: Any) -> np.ndarray:
        """Unit-norm text embeddings [texts, dim] (float64); a dual encoder only."""
        __tracebackhide__ = True
        texts_list = self._texts(texts, "encode_texts")
        self.runner.refresh()
        return self.runner.text_vectors(texts_list)

    def evaluate(
        self,
        *,
        task: str,
        examples: Sequence[Mapping[str, Any]],
        threshold: float,
        capability: str | None = None,
        name: str | None = None,
        **task_settings: Any,
    ) -> CapabilityResult:
        """Judge ``examples`` as a checklist test of kind ``task`` would be, record the row,
        and fail the test with the verdict line when it does not pass.

        ``capability`` defaults to the test's ``@pytest.mark.vlcheck(capability=...)``;
        ``name`` tells several calls of one test apart; ``task_settings`` are the kind's
        test-level keys (``criterion``, ``cutoff``, ``macro``, ...).
        """
        __tracebackhide__ = True
        item = self._item()
        test = self._build(item, task, examples, threshold, capability, name, task_settings)
        self.runner.refresh()
        result = self._state.evaluate(test, self.name)
        item.stash.setdefault(ROWS_KEY, []).append(result)
        item.user_properties.extend(result_properties(result))
        if result.status != "passed":
            raise VerdictFailure(result)
        return result

    def _build(
        self,
        item: pytest.Item,
        task: str,
        examples: list[Any],
        threshold: float,
        capability: str | None,
        name: str | None,
        settings: Mapping[str, Any],
    ) -> ChecklistTest:
        context, line = self._caller()
        if not isinstance(examples, (list, tuple)):
            raise VlcheckUserError(
                f"{context.path}:{line}: vl_model.evaluate: examples is {_shown(examples)}; "
                "expected a list of example mappings"
            )
        key = row_key(item, self.name) + (f"::{name}" if name else "")
        if any(row.test == key for row in item.stash.get(ROWS_KEY, [])):
            raise VlcheckUserError(
                f"{context.path}:{line}: evaluate name {name or '(none)'!r} is already used in "
                "this test; expected a distinct name=... for each evaluate call"
            )
        capability = capability or marked_capability(item)
        if capability is None:
            raise VlcheckUserError(
                f"{context.path}:{line}: evaluate needs capability=... (e.g. "
                "'attribute/color') or a @pytest.mark.vlcheck(capability=...) on the test"
            )
        return build_test(
            context,
            line,
            self._store(),
            key=key,
            name=name or getattr(item, "originalname", item.name),
            task=task,
            capability=capability,
            threshold=threshold,
            examples=examples,
            settings=settings,
        )

    def _item(self) -> pytest.Item:
        item = self.config.stash.get(CURRENT_KEY, None)
        if item is None:
            raise VlcheckUserError("vl_model.evaluate must be called while a test runs")
        return item

    def _caller(self) -> tuple[ParseContext, int]:
        """The user's file and line that called into ``vl_model`` (where errors point);
        relative image paths resolve from that file's folder (or ``--vl-image-root``)."""
        frame = sys._getframe(1)
        here = Path(__file__).resolve()
        while frame.f_back is not None and Path(frame.f_code.co_filename).resolve() == here:
            frame = frame.f_back
        path = Path(frame.f_code.co_filename)
        image_dir = self._state.settings.image_root or path.parent
        return ParseContext(path, image_dir), frame.f_lineno

    def _refs(self, images: Any, call: str) -> list[Any]:
        context, line = self._caller()
        items = _checked(
            images, "images", _is_image, IMAGES_EXPECTED, f"{context.path}:{line}", call
        )
        return image_refs(items, context, line, self._store())

    def _texts(self, texts: Any, call: str) -> list[str]:
        context, line = self._caller()
        return _checked(texts, "texts", _is_text, TEXTS_EXPECTED, f"{context.path}:{line}", call)

    def _store(self) -> PixelStore:
        cache = self._state.settings.url_cache_dir
        base = cache if cache is not None else Path(self.config.rootpath) / ".vlcheck_cache"
        return PixelStore(base / "pil")

    def _unavailable(self, unscorable: Unscorable) -> MissingImagesError:
        context, line = self._caller()
        lines = [f"{context.path}:{line}: {len(unscorable.refs)} image(s) could not be loaded:"]
        lines += [
            f"  {ref.describe()}: {reason}"
            for ref, reason in zip(unscorable.refs, unscorable.reasons, strict=True)
        ]
        return MissingImagesError("\n".join(lines))


IMAGES_EXPECTED = (
    "an image or a non-empty list of them (a path, a PIL image, or a mapping as a checklist's "
    "'image' key takes)"
)
TEXTS_EXPECTED = "a non-empty string or a non-empty list of them"


def _checked(
    value: Any, argument: str, accept: Any, expected: str, where: str, call: str
) -> list[Any]:
    """``value`` as a list (one input, or a list or tuple of them), each item accepted; else
    one line at the user's call naming the argument (and the item)."""
    several = isinstance(value, (list, tuple))
    items = list(value) if several else [value]
    if not items:
        raise VlcheckUserError(
            f"{where}: vl_model.{call}: {argument} is empty; expected {expected}"
        )
    for index, item in enumerate(items):
        if not accept(item):
            name = f"{argument}[{index}]" if several else argument
            raise VlcheckUserError(
                f"{where}: vl_model.{call}: {name} is {_shown(item)}; expected {expected}"
            )
    return items


def _is_text(item: Any) -> bool:
    return isinstance(item, str) and bool(item.strip())


def _is_image(item: Any) -> bool:
    return isinstance(item, (str, os.PathLike, Mapping)) or is_pil(item)


def _shown(value: Any) -> str:
    """A value as a message shows it: its type and a short repr."""
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


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
    state: VlcheckSession, item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo
) -> list[dict[str, Any]] | None:
    """The rows a ``vl_model`` test sends with its report, and its failure text.

    Each ``evaluate`` call is one row with its own verdict; a marked test that made none has
    one unmeasured row under pytest's verdict. A verdict or a user error replaces the
    traceback, as for checklist items.
    """
    model = model_of(item)
    if model is None or not (
        report.when == "call" or (report.when == "setup" and not report.passed)
    ):
        return None
    if call.excinfo is not None and isinstance(call.excinfo.value, VerdictFailure):
        result = call.excinfo.value.result
        report.longrepr = "\n".join([verdict_line(result), *verdict_details(result)])
    elif call.excinfo is not None and isinstance(call.excinfo.value, VlcheckUserError):
        report.longrepr = call.excinfo.value.render()
    rows = item.stash.get(ROWS_KEY, [])
    capability = marked_capability(item)
    if not rows and capability is not None:
        status = "error" if report.when == "setup" and report.failed else report.outcome
        error = call.excinfo.value if call.excinfo is not None else None
        message = "" if error is None else (str(error) or type(error).__name__).splitlines()[0]
        rows = [_unmeasured(state, item, model, capability).with_status(status, message)]
    return [row.to_json(with_outcomes=True) for row in rows] or None


def _unmeasured(
    state: VlcheckSession, item: pytest.Item, model: str, capability: str
) -> CapabilityResult:
    test = ChecklistTest(
        id=row_key(item, model),
        capability=capability,
        task=UNMEASURED_TASK,
        threshold=0.0,
        examples=(),
        file=item.path,
        line=item.reportinfo()[1] + 1,
    )
    return replace(unscored_result(test, model, "passed"), file=state.relative(item.path))


# -- hooks (registered by plugin.py) ------------------------------------------------------


@pytest.fixture(scope="session")
def vl_model(request: pytest.FixtureRequest) -> VlModel:
    """The model under test, once per ``--vl-model`` (skipped when none is given)."""
    model = getattr(request, "param", None)
    if model is None:
        pytest.skip(NO_MODEL_REASON)
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
