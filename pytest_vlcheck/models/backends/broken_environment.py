"""A backend whose packages this Python environment cannot import: one line saying so.

torch and torchvision installed from different builds make ``import torchvision`` raise
(``operator torchvision::nms does not exist``) from deep inside open_clip's or transformers'
imports. That is neither a bug in vlcheck nor a fault of the model, and its traceback says
neither: the user needs the package that failed, the exception, and how to repair the
environment. Anything that raised outside a module's import keeps its traceback.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from pytest_vlcheck.errors import user_frame

_PACKAGE_DIR = Path(__file__).resolve().parents[2]
_TORCH_PAIR = frozenset({"torch", "torchvision"})


def import_failure(exc: BaseException) -> str | None:
    """Why the environment cannot import what a backend needs, as the end of one line
    ("this Python environment cannot import ..."), or None when ``exc`` was not raised while
    a package outside vlcheck was being imported."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.name == "<module>" and not _is_ours(frame.filename)
    ]
    if not frames:
        return None
    failing = frame_package(frames[-1].filename)
    detail = " ".join(str(exc).split())
    what = f"{type(exc).__name__}" + (f": {detail}" if detail else "")
    where = user_frame(exc) or f"{frames[-1].filename}:{frames[-1].lineno}"
    if failing in _TORCH_PAIR or "torchvision::" in detail:
        fix = (
            "torch and torchvision are from different builds; expected a matching pair, "
            "e.g. pip install --force-reinstall torch torchvision from one index "
            "(--index-url https://download.pytorch.org/whl/cpu for the CPU builds)"
        )
    else:
        fix = f"expected a working install, e.g. pip install --force-reinstall {failing}"
    return f"this Python environment cannot import {failing} ({where}: {what}); {fix}"


def frame_package(filename: str) -> str:
    """The top-level package a file belongs to, by the ``sys.path`` entry it is under."""
    path = Path(filename).resolve()
    roots = [Path(entry or ".").resolve() for entry in sys.path]
    under = [root for root in roots if path.is_relative_to(root) and path != root]
    if not under:
        return path.stem
    first = path.relative_to(max(under, key=lambda root: len(root.parts))).parts[0]
    return first.removesuffix(".py")


def _is_ours(filename: str) -> bool:
    return filename.startswith("<") or Path(filename).resolve().is_relative_to(_PACKAGE_DIR)
