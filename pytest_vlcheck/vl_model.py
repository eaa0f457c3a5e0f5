"""``VlModel``, what the ``vl_model`` fixture (``fixture``) gives a Python test: scoring
through the session's runner, and ``evaluate``, which judges examples as a checklist test
would and records the row on the running test. Its own module so that the fixture's hooks,
registered in every pytest run, do not import the engine.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vlcheck.checklist.python_tests import PixelStore, build_test, image_refs, is_pil
from pytest_vlcheck.engine import MissingImagesError, Unscorable
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.items import SESSION_KEY, VerdictFailure, result_properties
from pytest_vlcheck.parsing.example_fields import ParseContext
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.vl_tests import CURRENT_KEY, ROWS_KEY, marked_capability, row_key

if TYPE_CHECKING:
    import numpy as np

    from pytest_vlcheck.checklist.schema import ChecklistTest
    from pytest_vlcheck.engine import ModelRunner
    from pytest_vlcheck.run.session import VlcheckSession


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
        result = self._state.judge(test, self.name)
        item.stash.setdefault(ROWS_KEY, []).append(result)
        item.user_properties.extend(result_properties(result))
        if result.status != "passed":
            raise VerdictFailure(result)
        return result

    def _build(
        self,
        item: pytest.Item,
        task: str,
        examples: Sequence[Mapping[str, Any]],
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
            name=name or str(getattr(item, "originalname", item.name)),
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
