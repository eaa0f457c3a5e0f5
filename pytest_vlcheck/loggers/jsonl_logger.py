"""``jsonl:FILE``: one JSON line per logged step, appended; a dependency-free record that
any script can read back (``{"step": N, "scalars": {...}}``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path


class JsonlLogger:
    """Appends each ``log`` call as one line, written with a single ``write`` and flushed,
    so concurrent or interrupted runs never leave half a line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        line = json.dumps({"step": step, "scalars": dict(scalars)}, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def close(self) -> None:
        """Nothing is held open between calls."""
