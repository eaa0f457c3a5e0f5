"""When a checkpoint is whole: never score a file training is still writing.

A ``.safetensors`` file says its own length: an 8-byte little-endian header size, the JSON
header, then the tensors, whose ``data_offsets`` end where the file must end. It is complete
when its size is exactly that, still being written while shorter, and corrupt when longer or
when its header cannot be read. Any other file (``.pt``, ``.bin``) and a checkpoint folder
(``hf:out/checkpoint-*``) are complete once their listing (names and sizes) has not changed for
the settle time, with every ``.safetensors`` inside complete by its header.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Completeness = Literal["complete", "writing", "corrupt"]

MAX_HEADER_BYTES = 100_000_000
"""safetensors' own limit on the header: a larger size field is not a header."""

Listing = tuple[tuple[str, int], ...]


def safetensors_completeness(path: Path) -> tuple[Completeness, str]:
    """(what the file is now, why when corrupt) from its header and size alone."""
    size = path.stat().st_size
    if size < 8:
        return "writing", ""
    with path.open("rb") as stream:
        (header_size,) = struct.unpack("<Q", stream.read(8))
        if not 0 < header_size <= MAX_HEADER_BYTES:
            return "corrupt", f"header size field {header_size} is not a safetensors header's"
        if size < 8 + header_size:
            return "writing", ""
        raw = stream.read(header_size)
    try:
        header = json.loads(raw)
        ends = [entry["data_offsets"][1] for k, entry in header.items() if k != "__metadata__"]
        expected = 8 + header_size + max((int(end) for end in ends), default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return "corrupt", "its header is not safetensors JSON"
    if size < expected:
        return "writing", ""
    if size > expected:
        return "corrupt", f"{size} bytes where its header says {expected}"
    return "complete", ""


def listing(path: Path) -> Listing:
    """The files under ``path`` (or the file itself) with their sizes, in a stable order."""
    if path.is_file():
        return (("", path.stat().st_size),)
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return tuple((p.relative_to(path).as_posix(), p.stat().st_size) for p in files)


@dataclass
class SettleClock:
    """How long each path's listing has stayed the same (seconds from the caller's clock)."""

    settle: float
    _since: dict[Path, tuple[Listing, float]] = field(default_factory=dict)

    def settled(self, path: Path, now: float) -> bool:
        """True once ``path``'s listing is non-empty and unchanged for ``settle`` seconds."""
        current = listing(path)
        seen = self._since.get(path)
        if seen is None or seen[0] != current:
            self._since[path] = (current, now)
            return bool(current) and self.settle <= 0
        return bool(current) and now - seen[1] >= self.settle


def completeness(path: Path, clock: SettleClock, now: float) -> tuple[Completeness, str]:
    """Whether checkpoint ``path`` (a file or a folder) can be read now; why when corrupt."""
    try:
        if path.is_file() and path.suffix == ".safetensors":
            return safetensors_completeness(path)
        inner = sorted(path.rglob("*.safetensors")) if path.is_dir() else []
        for weights in inner:
            state, why = safetensors_completeness(weights)
            if state != "complete":
                return state, f"{weights.relative_to(path)}: {why}" if why else ""
        return ("complete" if clock.settled(path, now) else "writing"), ""
    except FileNotFoundError:  # renamed or removed while looked at: look again later
        return "writing", ""
