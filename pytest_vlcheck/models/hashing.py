"""Weight fingerprints: the sha256 of a checkpoint file or a model folder's files, each file
hashed once per process while its stat is unchanged."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pytest_vlcheck.models.protocol import Digest

# Files that decide what a model computes: weights, configs, tokenizer vocabularies.
FINGERPRINT_SUFFIXES = frozenset(
    {
        ".safetensors",
        ".bin",
        ".pt",
        ".pth",
        ".ckpt",
        ".npz",
        ".json",
        ".txt",
        ".model",
        ".gz",
        ".jinja",  # chat templates: they make a generative model's prompt
    }
)

_CHUNK = 1 << 20


class FileHashes:
    """sha256 of files by (path, size, mtime_ns, inode, ctime_ns): hashing a multi-GB
    checkpoint costs seconds, and a session asks for the same fingerprint several times.

    Lifetime: the process (``FILE_HASHES``): an entry is valid as long as the file's stat
    is the same, whoever asks, and a training loop's sessions ask again and again."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int, int, int], str] = {}

    def sha256(self, path: Path) -> str:
        """sha256 hex of the file's bytes, read once while its stat is unchanged."""
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)
        found = self._known.get(key)
        if found is None:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            found = self._known[key] = digest.hexdigest()
        return found


FILE_HASHES = FileHashes()
"""The process's file hashes (made at import)."""


def fingerprint_path(path: str | os.PathLike[str], digest: Digest | None = None) -> str:
    """sha256 hex of a weights file, or of a directory's weight/config/tokenizer files.

    For a directory, every file whose suffix is in ``FINGERPRINT_SUFFIXES`` (searched
    recursively, hidden entries skipped) contributes its relative name and its own sha256, in
    sorted order, so renaming or editing any of them changes the result. Files are hashed
    through ``digest`` when given (``EmbeddingCache.file_digest`` reads an unchanged 600 MB
    checkpoint once, not on every run), else through a per-process memo.
    """
    hash_file = sha256_file if digest is None else digest
    target = Path(path)
    if target.is_file():
        return _weights_digest(target, hash_file)
    if not target.is_dir():
        raise FileNotFoundError(f"cannot fingerprint {str(path)!r}: no such file or directory")
    combined = hashlib.sha256()
    for rel in _fingerprint_members(target):
        combined.update(rel.encode("utf-8"))
        combined.update(b"\0")
        combined.update(_weights_digest(target / rel, hash_file).encode("ascii"))
        combined.update(b"\n")
    return combined.hexdigest()


def _weights_digest(path: Path, hash_file: Digest) -> str:
    real = path.resolve()
    # A Hugging Face cache blob is named by the sha256 of its content: no need to read it.
    return (
        real.name if real.parent.name == "blobs" and _is_sha256_hex(real.name) else hash_file(real)
    )


def _fingerprint_members(root: Path) -> list[str]:
    members = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in filenames:
            if filename.startswith(".") or Path(filename).suffix not in FINGERPRINT_SUFFIXES:
                continue
            members.append(Path(dirpath, filename).relative_to(root).as_posix())
    return sorted(members)


def sha256_file(path: Path) -> str:
    """sha256 hex of a file's bytes, remembered for the process while its stat (size, mtime,
    inode, ctime) is unchanged: naming a model for the embedding cache and loading it hash
    a large checkpoint once, not twice (``FILE_HASHES``)."""
    return FILE_HASHES.sha256(path)


def _is_sha256_hex(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)
