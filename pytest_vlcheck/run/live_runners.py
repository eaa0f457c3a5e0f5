"""Model objects measured again and again (a training loop's probe every N steps): one
runner per model object per process, so that an unchanged model's next ``evaluate`` call
re-encodes nothing, while a changed one starts afresh (``ModelRunner.refresh`` compares the
weights' fingerprint read at call time)."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_vlcheck.engine import ModelRunner
from pytest_vlcheck.engine.feed.store import DEFAULT_IMAGE_MEMORY
from pytest_vlcheck.engine.runner.progress import Writer
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions, Scorer
from pytest_vlcheck.models.registry import ModelSpec


class LiveRunners:
    """The runners of live model objects, held weakly: a runner goes with its model.

    Lifetime: the process (``LIVE_RUNNERS``): a training loop's calls to ``evaluate`` are
    separate sessions, and what they share is this registry, keyed by the model object."""

    def __init__(self) -> None:
        self._held: weakref.WeakKeyDictionary[Any, ModelRunner] = weakref.WeakKeyDictionary()

    def runner_for(
        self,
        model: Any,
        scorer: Scorer,
        spec: ModelSpec,
        options: ModelOptions,
        url_cache_dir: Path | None,
        progress: Writer | None = None,
        image_memory: int = DEFAULT_IMAGE_MEMORY,
    ) -> ModelRunner:
        """The runner of ``model`` (``scorer`` wraps it for this call): the one of its last
        call when the name, options and image budget are the same, else a new one; ready
        for a new call."""
        try:
            held = self._held.get(model)
        except TypeError:  # an object that cannot be referenced weakly is not remembered
            held = None
        same = held is not None and (held.spec, _results(held.options)) == (
            spec,
            _results(options),
        )
        if held is not None and same and held.images.store.budget == image_memory:
            held.options = options  # ``--vl-workers`` may differ
            held.rebind(scorer)
        else:
            loader = ImageLoader(url_cache_dir)
            held = ModelRunner.for_scorer(
                spec, scorer, options, loader, progress, image_memory=image_memory
            )
            with contextlib.suppress(TypeError):
                self._held[model] = held
        held.refresh()
        return held


def _results(options: ModelOptions) -> ModelOptions:
    """The options that decide results (``workers`` only says how many cores prepare)."""
    return replace(options, workers=None)


LIVE_RUNNERS = LiveRunners()
"""The process's live runners (made at import: one registry per process)."""
