"""Every file under a folder with its bytes: what a test compares to say a run left earlier
files byte-identical."""

from __future__ import annotations

from pathlib import Path


def files_under(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file below ``root`` (bytecode caches left out)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
