"""Every local file a model spec names, checked before torch is imported.

A missing config, weights file, model folder or scores file is the user's typo: found at
parse time it is one usage error in a fraction of a second (exit 4 from pytest, a
``SettingsError`` from ``evaluate``), not an errored item per test after torch, open_clip or
transformers took tens of seconds to import. So is an open_clip model-config .json that does
not fit its .safetensors weights (``backends.weight_shapes``: from the file's header).

Each backend declares its local files: an optional ``check_files(body)`` beside its ``load``
(``registry.Backend``; a plug-in backend may have one too) returns what is missing (None
when nothing is) and imports nothing heavy. The backends keep their own checks for what
needs the library (a hub name, a registry architecture, a folder's contents).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_vlcheck.errors import ModelSpecError

FileCheck = Callable[[str], "str | None"]
"""A backend's ``check_files``: the spec's body in, a "what is missing; what is expected"
text out."""


class SpecFileNotFoundError(ModelSpecError, FileNotFoundError):
    """A local file or folder a ``--vl-model`` spec names does not exist."""


class SpecFilesDisagreeError(ModelSpecError):
    """The files a ``--vl-model`` spec names exist but do not fit each other (a model
    config of another architecture than the weights)."""


def check_spec_files(text: str, check: FileCheck | None, body: str) -> None:
    """Raise ``SpecFileNotFoundError`` naming the spec when ``check`` (the backend's
    ``check_files``; None for a backend that names no local file vlcheck can check) finds a
    local file missing, ``SpecFilesDisagreeError`` when the files do not fit each other."""
    try:
        problem = check(body) if check else None
    except SpecFilesDisagreeError as exc:
        raise SpecFilesDisagreeError(f"{text}: {exc}") from None
    if problem is not None:
        raise SpecFileNotFoundError(f"{text}: {problem}")


def looks_local(text: str) -> bool:
    """A path, not a hub name (``ORG/NAME``): as the backends decide it."""
    return text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1


def missing_folder(part: str, what: str) -> str | None:
    """What is wrong when ``part`` looks like a local ``save_pretrained`` folder that does
    not exist; None for a hub name, an empty part or a folder that is there."""
    if part and looks_local(part) and not Path(part).expanduser().exists():
        return (
            f"{what} not found: {part}; expected a directory written by save_pretrained, "
            "or a hub name ORG/NAME"
        )
    return None
