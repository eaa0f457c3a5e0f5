"""A report folder is one run's files or none: ``manifest.json``, written last, names them.

Each report file is written atomically, but a folder holds several (``matrix.*``,
``report.html``, ``samples.jsonl``): a run killed between two renames, or two runs writing one
``--vl-report`` folder at once, could leave one run's matrix beside another's samples, every
file whole and the set wrong. So a writer holds the folder's lock (an ``flock`` on the folder,
which the kernel lets go of when a writer dies) for the whole set, and writes, after the
files, ``manifest.json``: the run's id and each file's SHA-256. A reader (``vlcheck report``,
``compare``, ``merge``) checks every file the manifest names that is present and refuses a
folder whose files are not the ones the manifest's run wrote, in one line. A folder without a
manifest (written before it existed) is read as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict, cast

from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.results.json_checks import ReportFormatError

MANIFEST = "manifest.json"
VERSION = 1


class Manifest(TypedDict):
    """A manifest as ``_read`` checked it: the run's id and each file's SHA-256 by name."""

    run: str
    files: dict[str, str]


__all__ = [
    "MANIFEST",
    "MixedReportFolder",
    "check_report_folder",
    "manifest_run",
    "new_run_id",
    "write_manifest",
    "writing",
]


class MixedReportFolder(ReportFormatError):
    """A report folder whose files are not all the ones its manifest's run wrote."""


def new_run_id() -> str:
    """A run's id: when it wrote (UTC) and a random part, so two runs never share one."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s write lock: a second writer waits until the first's set is whole."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the manifest still tells a mixed folder
        yield
        return
    fd = os.open(folder, os.O_RDONLY)  # the folder itself: no lock file left in it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing lets go of the lock


def write_manifest(folder: Path, written: Iterable[str], run: str) -> None:
    """``manifest.json`` naming ``run`` and the SHA-256 of each of the ``written`` files of
    ``folder``, and of the files an earlier manifest of the same run named (``vlcheck
    report`` re-rendering a run's folder keeps its ``samples.jsonl``); call it after writing
    them, under ``writing``."""
    names = list(written)
    if manifest_run(folder) == run:
        kept = _read(folder)["files"]
        names += [name for name in kept if name not in names and (folder / name).is_file()]
    files = {name: _sha256(folder / name) for name in names}
    document = {"vlcheck_manifest": VERSION, "run": run, "files": files}
    atomic_write_text(folder / MANIFEST, json.dumps(document, indent=2) + "\n")


def manifest_run(folder: Path) -> str | None:
    """The run id of ``folder``'s manifest (None when it has none or it cannot be read)."""
    try:
        return str(_read(folder)["run"])
    except (ReportFormatError, KeyError):
        return None


def check_report_folder(folder: Path) -> None:
    """Raise ``MixedReportFolder`` (one line) when a file of ``folder`` that its manifest
    names is not the file the manifest's run wrote; a folder without a manifest passes."""
    if not (folder / MANIFEST).is_file():
        return
    manifest = _read(folder)
    stale = [
        name
        for name, digest in manifest["files"].items()
        if (folder / name).is_file() and _sha256(folder / name) != digest
    ]
    if stale:
        raise MixedReportFolder(
            f"{folder}: {', '.join(stale)} {'is' if len(stale) == 1 else 'are'} not the "
            f"file{'s' if len(stale) > 1 else ''} run {manifest['run']} wrote ({MANIFEST}): "
            "the folder mixes two runs (one was stopped while writing, or two wrote it at "
            "once) or was edited; expected a folder one run wrote whole: run again, or write "
            f"each run to its own --vl-report folder (delete {MANIFEST} to read edited files)"
        )


def _read(folder: Path) -> Manifest:
    path = folder / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportFormatError(
            f"{path}: cannot read it ({exc}); expected a vlcheck manifest"
        ) from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not (
        isinstance(files, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
        and isinstance(doc.get("run"), str)
    ):
        raise ReportFormatError(f"{path}: expected {{'run': ID, 'files': {{NAME: SHA256}}}}")
    return cast(Manifest, doc)  # json's Any, its run and files checked above


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
