"""open_clip's table of pretrained tags, read without importing open_clip.

``import open_clip`` takes seconds (torch, torchvision, transformers). Two questions need
only the tag table: are a tag's weights in the local cache (the embedding cache's identity of
``clip`` is known without building the model), and may a load that will fail for want of
weights fail at once (an offline machine answers within seconds, not after the imports).

open_clip keeps the table in ``open_clip/pretrained.py``, whose own imports are light except
``safetensors.torch`` (which pulls in torch, and serves only to load weights, which this copy
never does). The file is loaded alone, under a private module name, with that one import
blocked. When that fails (a future open_clip whose file imports more), the real package is
imported instead: slower, the same answers.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from functools import cache
from typing import Any

_PRIVATE_PACKAGE = "_vlcheck_open_clip_tags"
_BLOCKED = "safetensors.torch"


@cache
def pretrained_table() -> Any | None:
    """A module with open_clip's ``is_pretrained_cfg``, ``get_pretrained_cfg`` and
    ``list_pretrained_tags_by_model``; None when open_clip is not installed."""
    if "open_clip" in sys.modules:
        return sys.modules["open_clip"]
    found = importlib.util.find_spec("open_clip")
    if found is None or not found.submodule_search_locations:
        return None
    try:
        return _load_alone(list(found.submodule_search_locations))
    except Exception:  # a third-party file run out of its package: any failure means "import"
        import open_clip

        return open_clip


def _load_alone(package_path: list[str]) -> types.ModuleType:
    """``pretrained.py`` (with its light siblings) under a private package that has no
    ``__init__`` code, so ``open_clip/__init__.py`` and its heavy imports never run."""
    package = types.ModuleType(_PRIVATE_PACKAGE)
    package.__path__ = package_path
    sys.modules[_PRIVATE_PACKAGE] = package
    block = _BLOCKED not in sys.modules
    if block:
        sys.modules[_BLOCKED] = None  # type: ignore[assignment]  # makes the import fail
    try:
        return importlib.import_module(f"{_PRIVATE_PACKAGE}.pretrained")
    except BaseException:
        for name in [n for n in sys.modules if n.split(".")[0] == _PRIVATE_PACKAGE]:
            del sys.modules[name]
        raise
    finally:
        if block and sys.modules.get(_BLOCKED, ...) is None:
            del sys.modules[_BLOCKED]
