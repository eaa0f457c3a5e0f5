"""The training callbacks' arguments, checked when the callback is made.

A callback evaluates only after training has run for a while, so a misspelt keyword
(``batch_sise=32``), a keyword the callback sets itself (``step=``) or a checklist path that
does not exist would otherwise surface minutes or hours in. Everything ``evaluate`` can check
without a model is checked here: the keywords, the run options' values and the checklist
paths (each file's header).
"""

from __future__ import annotations

import inspect
from typing import Any

from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.run.checklists import checklist_files, given_paths
from pytest_vlcheck.run.evaluate import evaluate
from pytest_vlcheck.run.settings import (
    DEFAULTS,
    KeywordOptions,
    build_settings,
    refuse_unknown,
)

_SET_BY_THE_CALLBACK = {
    "step": "the callback logs each evaluation at the trainer's step",
    "name": "the callback reports the model being trained as 'model' (to tell runs apart, "
    "name the trainer's run or logger)",
}
_CALLBACK_OWN = {"model", "checklists", "options"}


def check_callback_arguments(owner: str, checklists: Any, options: dict[str, Any]) -> None:
    """Raise one ``SettingsError`` naming ``owner`` and the first argument that cannot work:
    a keyword ``evaluate`` does not take (with the nearest one), ``step=``/``name=`` (with what
    to do instead), a run option's value, a checklist path that is missing or no checklist."""
    try:
        _check(checklists, options)
    except SettingsError as exc:
        raise SettingsError(f"{owner}: {exc}") from None


def _check(checklists: Any, options: dict[str, Any]) -> None:
    for key, why in _SET_BY_THE_CALLBACK.items():
        if key in options:
            raise SettingsError(f"{key}={options[key]!r:.40}: not a callback option; {why}")
    own = set(inspect.signature(evaluate).parameters) - _CALLBACK_OWN
    refuse_unknown(options, sorted(own | set(DEFAULTS)), "an evaluate keyword")
    build_settings(KeywordOptions({k: v for k, v in options.items() if k in DEFAULTS}))
    paths = given_paths(checklists)
    if paths or not options.get("bundled"):
        checklist_files(paths)
