"""Package names resolved on first use (PEP 562 ``__getattr__``).

A package ``__init__`` that imported its modules to re-export their names would load all of
them (numpy, the task kinds, the report renderers) as soon as any one module of the package
is imported: pytest loading the plugin in a project without a checklist would pay for them.
``lazy_exports`` keeps ``from pytest_vlcheck.engine import ModelRunner`` working without that,
and ``numpy`` stands in for numpy in the modules that collecting a checklist imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``exports`` maps each name to the module defining it.
    A name once resolved is set on the package, so later uses cost a plain attribute read."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


class _ImportedOnFirstUse:
    """A module's stand-in that imports it at the first attribute read; each name read is
    then kept on the stand-in, so later reads cost what a module attribute read costs."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)
        return value


# numpy for the modules a collection imports (the task kinds, their metrics, the scene
# renderer): collecting a checklist needs none of it, and its import was about a tenth of
# collecting 100,000 examples. Use: ``from pytest_vlcheck.lazy import numpy as np``.
if TYPE_CHECKING:
    import numpy as numpy
else:
    numpy = _ImportedOnFirstUse("numpy")
