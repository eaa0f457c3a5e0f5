"""``tensorboard:DIR``: scalars as TensorBoard events, through torch's ``SummaryWriter``.

One writer per folder per process, kept across ``evaluate`` calls (a training loop logs
every N steps into one event file) and closed at exit."""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_WRITERS: dict[Path, Any] = {}


def _close_all() -> None:
    for writer in _WRITERS.values():
        writer.close()
    _WRITERS.clear()


atexit.register(_close_all)


class TensorBoardLogger:
    """``add_scalar`` per name at ``step``; flushed after every call."""

    def __init__(self, directory: Path) -> None:
        key = directory.resolve()
        if key not in _WRITERS:
            from torch.utils.tensorboard import SummaryWriter

            _WRITERS[key] = SummaryWriter(log_dir=str(directory))
        self.writer = _WRITERS[key]

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        for name, value in scalars.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.flush()
