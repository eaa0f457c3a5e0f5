"""``evaluate``'s own arguments, checked before anything loads or scores.

The ``--vl-*`` options are checked by ``run.settings`` for both callers; what only the Python
API takes (the model object, ``name``, ``select``) is checked here, so a training loop's
mistake costs one line naming the argument rather than a traceback after scoring (``name=5``
reached the report writer, ``select=5`` the test filter, a model on the ``meta`` device the
weight fingerprint).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.models.checkpoints import unstepped
from pytest_vlcheck.run.settings import Settings


class CheckpointStepWarning(UserWarning):
    """Glob checkpoints whose names hold no step: measured, but not at a step."""


def check_arguments(
    model: Any, *, name: Any, select: Any, distributed: Any = True, distributed_timeout: Any = None
) -> None:
    """Raise ``SettingsError`` naming the first argument that cannot work."""
    _check_name(name)
    _check_select(select)
    _check_device(model)
    _check_distributed(distributed, distributed_timeout)


def _check_distributed(distributed: Any, timeout: Any) -> None:
    """Checked on every machine: a wrong value would otherwise misbehave only on a cluster."""
    if not isinstance(distributed, bool):
        raise SettingsError(
            f"distributed: is {distributed!r:.60}; expected True (collective under "
            "torch.distributed) or False (this rank's own whole evaluation)"
        )
    if timeout is None:
        return
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if not (number and math.isfinite(timeout) and timeout > 0):
        raise SettingsError(
            f"distributed_timeout: is {timeout!r:.60}; expected a finite number of seconds "
            "above 0 (see docs/reliability.md for choosing it), or None for 1800"
        )


def _check_name(name: Any) -> None:
    if name is None:
        return
    if not isinstance(name, str) or not name.strip() or "\n" in name:
        raise SettingsError(
            f"name: is {name!r:.60}; expected a non-empty one-line string naming the model's "
            "column (e.g. name='step-200')"
        )


def _check_select(select: Any) -> None:
    if select is None:
        return
    entries = [select] if isinstance(select, str) else select
    if not isinstance(entries, (list, tuple)) or not all(
        isinstance(entry, str) and entry.strip() for entry in entries
    ):
        raise SettingsError(
            f"select: is {select!r:.60}; expected a test id or capability prefix, or a list "
            "of them (e.g. select=['attribute/color'])"
        )


def _check_device(model: Any) -> None:
    """A torch model whose weights are on the ``meta`` device has no values to score with
    (``from_pretrained(..., device_map='meta')``, ``init_empty_weights``)."""
    tensors = getattr(model, "parameters", None)
    if isinstance(model, str) or not callable(tensors):
        return
    try:
        on_meta = [p for p in tensors() if getattr(p, "is_meta", False)]
    except Exception:  # not a torch module after all: the live-model check says what it is
        return
    if on_meta:
        raise SettingsError(
            f"model: {len(on_meta)} of its weight tensors are on the meta device (shapes "
            "without values); expected a model with its weights loaded, e.g. "
            "model.to_empty(device='cpu') then load_state_dict, or from_pretrained without "
            "a meta device_map"
        )


def warn_unstepped(settings: Settings) -> None:
    """The one warning a glob's checkpoints without a step get (pytest prints it under the
    matrix; with a logger they are refused)."""
    line = unstepped(settings.specs)
    if line:
        warnings.warn(CheckpointStepWarning(line), stacklevel=3)
