"""Where the bundled checklists live, in a source checkout and in an installed wheel.

The YAML files are kept in the repository's top-level ``checklists/`` directory and shipped
in the wheel as package data of ``pytest_vlcheck.checklists`` (``setup.py`` maps that
package onto ``checklists/``). An editable install may expose them either way.

Reports and baselines name a checklist relative to pytest's rootdir. An installed bundled
checklist lies outside it, under a virtual environment whose path differs between
machines, so it is named ``bundled:NAME.yaml`` instead (``report_name``/``from_report_name``)
and a baseline saved on one machine gates a run on another.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest_vlcheck

PACKAGE = "pytest_vlcheck.checklists"


def _has_checklists(directory: Path) -> bool:
    return directory.is_dir() and any(directory.glob("*.yaml"))


def _candidates() -> list[Path]:
    package_dir = Path(pytest_vlcheck.__file__).resolve().parent
    found = [package_dir / "checklists"]  # wheel: site-packages/pytest_vlcheck/checklists
    try:  # editable installs map the package name onto the source directory
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found += [Path(p) for p in spec.submodule_search_locations]
    found.append(package_dir.parent / "checklists")  # source checkout: <repo>/checklists
    return found


def bundled_checklists_dir() -> Path:
    """The directory holding the bundled checklist YAML files.

    Raises FileNotFoundError listing the places looked at when none holds them (a broken
    install); the caller turns that into a usage error.
    """
    candidates = _candidates()
    for directory in candidates:
        if _has_checklists(directory):
            return directory
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"bundled checklists not found (looked in {looked})")


def bundled_checklists() -> list[Path]:
    """The bundled checklist files, sorted by name."""
    return sorted(bundled_checklists_dir().glob("*.yaml"))


PREFIX = "bundled:"


def report_name(path: Path) -> str | None:
    """``bundled:NAME.yaml`` when ``path`` is a bundled checklist, else None."""
    try:
        directory = bundled_checklists_dir()
    except FileNotFoundError:
        return None
    if path.parent.resolve() == directory.resolve():
        return PREFIX + path.name
    return None


def from_report_name(name: str, root: Path) -> Path:
    """The file a report or baseline names: a bundled checklist, or a path under ``root``."""
    if name.startswith(PREFIX):
        return bundled_checklists_dir() / name[len(PREFIX) :]
    return root / name
