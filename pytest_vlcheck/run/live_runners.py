"""Model objects measured again and again (a training loop's probe every N steps): one
runner per model object per process, so that an unchanged model's next ``evaluate`` call
re-encodes nothing, while a changed one starts afresh (``ModelRunner.refresh`` compares the
weights' fingerprint read at call time). Runners are held weakly: they go with the model."""

from __future__ import annotations

import contextlib
import weakref
from pathlib import Path
from typing import Any

from pytest_vlcheck.engine import ModelRunner
from pytest_vlcheck.engine.progress import Writer
from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import ModelSpec

_RUNNERS: weakref.WeakKeyDictionary[Any, ModelRunner] = weakref.WeakKeyDictionary()


def runner_for(
    model: Any,
    scorer: Any,
    spec: ModelSpec,
    options: ModelOptions,
    url_cache_dir: Path | None,
    progress: Writer | None = None,
) -> ModelRunner:
    """The runner of ``model`` (``scorer`` wraps it for this call): the one of its last call
    when the name and options are the same, else a new one; ready for a new call."""
    try:
        held = _RUNNERS.get(model)
    except TypeError:  # an object that cannot be referenced weakly is not remembered
        held = None
    if held is not None and held.spec == spec and held.options == options:
        held.rebind(scorer)
    else:
        held = ModelRunner.for_scorer(spec, scorer, options, ImageLoader(url_cache_dir), progress)
        with contextlib.suppress(TypeError):
            _RUNNERS[model] = held
    held.refresh()
    return held
