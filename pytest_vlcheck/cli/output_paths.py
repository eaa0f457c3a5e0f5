"""Where a ``vlcheck`` command writes (``-o``), checked before any work: an existing file
where a folder is meant, a folder where a file is meant, a parent folder that does not exist
or cannot be written. One line, exit status 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_vlcheck.errors import VlcheckUserError


class OutputPathError(VlcheckUserError, ValueError):
    """``-o PATH`` cannot take what the command writes."""


def check_output_folder(path: Path) -> None:
    """A folder to write files into: an existing, writable folder, or a new one whose parent
    exists and is writable."""
    if path.exists():
        if not path.is_dir():
            raise OutputPathError(f"-o {path} is a file; expected a folder to write into")
        _writable(path, path)
        return
    _parent(path)


def check_output_file(path: Path) -> None:
    """A file to write: not a folder, in an existing, writable folder."""
    if path.is_dir():
        raise OutputPathError(f"-o {path} is a folder; expected the file to write")
    _parent(path)


def _parent(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise OutputPathError(f"-o {path}: the folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise OutputPathError(f"-o {path}: {parent} is a file, not a folder")
    _writable(parent, path)


def _writable(folder: Path, path: Path) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"-o {path}: cannot write in {folder} (permission denied)")
