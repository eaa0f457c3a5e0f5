"""Atomic file writes: readers see either the old file or the complete new one, never half.

Reports, caches and baselines are read by other processes (CI scripts, a later pytest run,
an xdist sibling). Writing in place would let a crash or a full disk leave a truncated file
behind, so every writer in the project goes through this module.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text"]

_TEMP_ATTEMPTS = 100


def _open_temp(directory: Path, name: str, mode: int) -> tuple[int, Path]:
    """Create a fresh temp file next to the target; ``mode`` is filtered by the umask.

    ``tempfile.mkstemp`` would create it 0600, which would make a report unreadable to the
    group after ``os.replace``; ``os.open`` with O_EXCL keeps the usual umask semantics.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(_TEMP_ATTEMPTS):
        temp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: could not create a temporary file for {name}")


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); silently a no-op where unsupported."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh temp file beside ``path`` for a writer that needs a file name (safetensors, a
    download); when the block ends normally it is fsynced and renamed over ``path``.

    On any exception, including KeyboardInterrupt, the temp file is removed and the previous
    file is untouched. An existing target keeps its permission bits. The parent directory
    must exist.
    """
    target = Path(path)
    directory = target.parent
    try:
        mode = target.stat().st_mode & 0o7777
        keep_mode = True
    except FileNotFoundError:
        mode, keep_mode = 0o666, False
    fd, temp = _open_temp(directory, target.name, mode)
    os.close(fd)
    try:
        yield temp
        with open(temp, "rb+") as handle:
            os.fsync(handle.fileno())
        if keep_mode:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see ``atomic_path``)."""
    with atomic_path(path) as temp:
        temp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` atomically, encoded as given, newlines kept verbatim.

    No newline translation happens, so the bytes on disk are the same on every platform.
    """
    atomic_write_bytes(path, text.encode(encoding))
