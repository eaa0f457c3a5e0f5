"""Find and load the checklists a Python caller names, as pytest would collect them.

A file is loaded (one that is not a checklist says why); a folder is searched recursively
for checklist files the way the plugin recognises them (``is_checklist_file``), skipping
the folders pytest's default ``norecursedirs`` skips. ``select`` narrows the tests.

A training loop calls ``evaluate`` on the same files every N steps: a file's tests are
parsed again only when it or its JSON Lines examples changed (``_LoadedFiles``).
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist import ChecklistTest, is_checklist_file, load_checklist
from pytest_vlcheck.engine.scores.embedding_cache import RACY_SECONDS
from pytest_vlcheck.errors import SettingsError
from pytest_vlcheck.parsing.yaml_lines import checklist_header_problem

SKIPPED_FOLDERS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv")
"""pytest's default ``norecursedirs``."""

NOTHING_FOUND = (
    "no checklist found in {paths}; expected a .yaml or .yml file whose first key is "
    "'vlcheck: 1' (then 'tests:'), or a folder holding some ('vlcheck validate PATH' says why "
    "a file is not one)"
)


def given_paths(checklists: Any) -> list[str | os.PathLike[str]]:
    """``evaluate``'s ``checklists`` argument as a list: a path, or a list of paths."""
    paths = [checklists] if isinstance(checklists, (str, os.PathLike)) else checklists
    if not isinstance(paths, (list, tuple)) or not all(
        isinstance(path, (str, os.PathLike)) for path in paths
    ):
        raise SettingsError(
            f"checklists: got {type(checklists).__name__} {checklists!r:.60}; expected a path, "
            "or a list of checklist files and folders"
        )
    return list(paths)


def checklist_files(
    paths: Sequence[str | os.PathLike[str]], where: str = "checklists"
) -> list[Path]:
    """Every checklist file under ``paths``, each once, in path order."""
    found: dict[Path, None] = {}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.update(dict.fromkeys(_search(path)))
        elif path.is_file():
            problem = checklist_header_problem(path)
            if problem is not None:
                raise SettingsError(f"{where}: {problem}")
            found[path] = None
        else:
            raise SettingsError(
                f"{where}: {path} does not exist; expected a checklist file or a folder of them"
            )
    if not found:
        names = ", ".join(str(path) for path in paths)
        raise SettingsError(f"{where}: {NOTHING_FOUND.format(paths=names or 'no paths')}")
    return list(found)


def _search(folder: Path) -> list[Path]:
    """Checklist files under ``folder``, sorted, outside the folders pytest skips."""
    files = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            if not any(fnmatch.fnmatch(entry.name, pattern) for pattern in SKIPPED_FOLDERS):
                files.extend(_search(entry))
        elif is_checklist_file(entry):
            files.append(entry)
    return files


def load_tests(files: Sequence[Path], image_root: Path | None) -> list[ChecklistTest]:
    """Every test of ``files`` (a checklist error is raised as it is: ``FILE:LINE: ...``)."""
    return [test for file in files for test in _LOADED.tests(file, image_root)]


Stamp = tuple[tuple[int, int, int, int], ...]
"""Inode, size, modification and change time (ns) of each file a checklist's tests were read
from (a write moves the change time, which no tool can set back)."""


def _stamp(files: Sequence[Path]) -> Stamp | None:
    """The files' stamp, or None when one is gone."""
    try:
        stats = [os.stat(path) for path in files]
    except OSError:
        return None
    return tuple((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for st in stats)


@dataclass
class _LoadedFiles:
    """Parsed checklists kept across ``evaluate`` calls (the bundled suite: 0.9 s of each
    call on this machine), each with the stamp of the files it was read from; the tests are
    frozen, so a kept one is the one a new parse would give while the stamp holds."""

    limit: int = 64
    kept: dict[tuple[str, str, str], tuple[Stamp, tuple[ChecklistTest, ...]]] = field(
        default_factory=dict
    )

    def tests(self, file: Path, image_root: Path | None) -> tuple[ChecklistTest, ...]:
        key = (str(file), os.getcwd(), str(image_root))  # tests hold paths as given
        held = self.kept.get(key)
        if held is not None and _stamp(_read_files(held[1], file)) == held[0]:
            return held[1]
        before = _stamp([file])
        tests = load_checklist(file, image_root=image_root).tests
        stamp = _stamp(_read_files(tests, file))
        self.kept.pop(key, None)
        if stamp is not None and before == stamp[:1] and not _racy(stamp):
            self.kept[key] = (stamp, tests)
            while len(self.kept) > self.limit:
                del self.kept[next(iter(self.kept))]
        return tests


def _racy(stamp: Stamp) -> bool:
    """Whether a file was modified within ``RACY_SECONDS``: a same-size edit in the same
    clock tick (file systems with 1-2 s timestamps) would leave its stamp as it is, so such
    a parse is not kept (as git treats racily clean files)."""
    now = time.time_ns()
    return any(now - mtime < RACY_SECONDS * 1e9 for _, _, mtime, _ in stamp)


def _read_files(tests: Sequence[ChecklistTest], file: Path) -> list[Path]:
    """The checklist file and its tests' JSON Lines example files."""
    return [file, *dict.fromkeys(t.examples_file for t in tests if t.examples_file)]


_LOADED = _LoadedFiles()


def selected(tests: list[ChecklistTest], select: Sequence[str] | None) -> list[ChecklistTest]:
    """The tests ``select`` names: a test id, or a capability prefix (``attribute`` and
    ``attribute/color`` both select ``attribute/color``; ``attr`` selects neither). Every
    entry must select something, so a typo is not a silently smaller run."""
    if select is None:
        return tests
    entries = [select] if isinstance(select, str) else list(select)
    for entry in entries:
        if not any(_matches(test, entry) for test in tests):
            example = tests[0] if tests else None
            ids = f"{example.id!r} or {example.capability!r}" if example else "a test's id"
            raise SettingsError(
                f"select: {entry!r} is neither a test id nor a capability (prefix) of the "
                f"checklists; expected e.g. {ids}"
            )
    return [test for test in tests if any(_matches(test, entry) for entry in entries)]


def _matches(test: ChecklistTest, entry: str) -> bool:
    parts = tuple(entry.strip("/").split("/"))
    return test.id == entry or test.capability_parts[: len(parts)] == parts
