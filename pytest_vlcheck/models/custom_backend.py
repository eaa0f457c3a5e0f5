"""``py:MODULE:FACTORY``: a scorer made by the user's own code.

MODULE is imported from the current directory or ``sys.path``; FACTORY is called with no
arguments, or with the ``ModelOptions`` when it takes a parameter.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from pytest_vlcheck.models.protocol import ModelOptions


def load(body: str, options: ModelOptions) -> Any:
    """Import MODULE, call FACTORY and return its scorer."""
    module_name, sep, factory_name = body.rpartition(":")
    if not sep or not module_name or not factory_name:
        raise ValueError(
            f"'py:{body}' should read py:MODULE:FACTORY, e.g. py:my_scorers:make_scorer"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    module = importlib.import_module(module_name)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"module '{module_name}' has no callable '{factory_name}'")
    takes_options = bool(inspect.signature(factory).parameters)
    return factory(options) if takes_options else factory()
