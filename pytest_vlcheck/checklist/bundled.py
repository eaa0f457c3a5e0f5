"""Where the bundled checklists live, in a source checkout and in an installed wheel.

The YAML files are kept in the repository's top-level ``checklists/`` directory (the CLIP
suite) and ``checklists_generative/`` (the same capabilities asked of a generative model), and
shipped in the wheel as package data of ``pytest_vlcheck.checklists`` and
``pytest_vlcheck.checklists_generative`` (``setup.py`` maps those packages onto the folders).
An editable install may expose them either way.

Reports and baselines name a checklist relative to pytest's rootdir. An installed bundled
checklist lies outside it, under a virtual environment whose path differs between
machines, so it is named ``bundled:NAME.yaml`` (``bundled:checklists_generative/NAME.yaml``)
instead (``report_name``/``from_report_name``)
and a baseline saved on one machine gates a run on another.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest_vlcheck

SUITE = "checklists"
"""The CLIP suite's folder (``--vl-bundled``); ``GENERATIVE`` asks a generative model the same
capabilities (``pytest --pyargs pytest_vlcheck.checklists_generative`` when installed)."""
GENERATIVE = "checklists_generative"
SUITES = (SUITE, GENERATIVE)


def _has_checklists(directory: Path) -> bool:
    return directory.is_dir() and any(directory.glob("*.yaml"))


def _candidates(folder: str) -> list[Path]:
    package_dir = Path(pytest_vlcheck.__file__).resolve().parent
    found = [package_dir / folder]  # wheel: site-packages/pytest_vlcheck/<folder>
    try:  # editable installs map the package name onto the source directory
        spec = importlib.util.find_spec(f"pytest_vlcheck.{folder}")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found += [Path(p) for p in spec.submodule_search_locations]
    found.append(package_dir.parent / folder)  # source checkout: <repo>/<folder>
    return found


def bundled_checklists_dir(folder: str = SUITE) -> Path:
    """The directory holding a bundled suite's checklist YAML files (``folder``: one of
    ``SUITES``).

    Raises FileNotFoundError listing the places looked at when none holds them (a broken
    install); the caller turns that into a usage error.
    """
    candidates = _candidates(folder)
    for directory in candidates:
        if _has_checklists(directory):
            return directory
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"bundled checklists not found (looked in {looked})")


def bundled_checklists(folder: str = SUITE) -> list[Path]:
    """A bundled suite's checklist files, sorted by name."""
    return sorted(bundled_checklists_dir(folder).glob("*.yaml"))


PREFIX = "bundled:"


def report_name(path: Path) -> str | None:
    """``bundled:NAME.yaml`` when ``path`` is a checklist of the CLIP suite,
    ``bundled:checklists_generative/NAME.yaml`` for the generative suite, else None."""
    for folder in SUITES:
        try:
            directory = bundled_checklists_dir(folder)
        except FileNotFoundError:
            continue
        if path.parent.resolve() == directory.resolve():
            return PREFIX + ("" if folder == SUITE else f"{folder}/") + path.name
    return None


def from_report_name(name: str, root: Path) -> Path:
    """The file a report or baseline names: a bundled checklist, or a path under ``root``."""
    if not name.startswith(PREFIX):
        return root / name
    folder, _, file = name[len(PREFIX) :].rpartition("/")
    if folder and folder not in SUITES:
        return root / name  # no bundled suite: reported as a file that is not there
    return bundled_checklists_dir(folder or SUITE) / file
