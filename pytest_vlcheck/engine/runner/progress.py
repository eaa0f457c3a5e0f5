"""A one-line progress display while a model encodes images: count, images/s and ETA.

Shown only on a terminal: ``stderr_writer`` gives no writer when stderr is not a TTY or the
``CI`` environment variable is set, so logs and CI output stay clean. Under pytest, output
capture replaces stderr while tests run; the plugin passes its capture manager's
"suspend" context so the line reaches the real terminal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

Writer = Callable[[str], None]
Suspend = Callable[[], AbstractContextManager[object]]
MIN_INTERVAL_S = 0.2
"""Redraw at most this often (the last update is always drawn)."""


def stderr_writer(suspend: Suspend = nullcontext) -> Writer | None:
    """A writer to the real stderr, or None when it is not a terminal or ``CI`` is set."""
    with suspend():
        stream = sys.stderr
        interactive = bool(getattr(stream, "isatty", lambda: False)())
    if not interactive or os.environ.get("CI"):
        return None

    def write(text: str) -> None:
        with suspend():
            stream.write(text)
            stream.flush()

    return write


@dataclass
class Progress:
    """Progress of ``total`` images for one model, drawn with ``write`` (carriage returns)."""

    label: str
    total: int
    write: Writer
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    started: float = field(default=0.0)
    _drawn: float = -1.0
    _width: int = 0

    def __post_init__(self) -> None:
        self.started = self.clock()

    def advance(self, count: int) -> None:
        """``count`` more images are encoded; redraw if the last draw is old enough."""
        self.done += count
        now = self.clock()
        if self.done >= self.total or now - self._drawn >= MIN_INTERVAL_S:
            self._drawn = now
            text = self.line(now)
            self._width = max(self._width, len(text))
            self.write("\r" + text.ljust(self._width))

    def line(self, now: float) -> str:
        """``[clip] 512/1560 images, 85.3 images/s, ETA 12 s``."""
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        eta = f", ETA {(self.total - self.done) / rate:.0f} s" if rate > 0 else ""
        return f"[{self.label}] {self.done}/{self.total} images, {rate:.1f} images/s{eta}"

    def close(self) -> None:
        """Erase the line (the terminal summary gives the totals)."""
        if self._width:
            self.write("\r" + " " * self._width + "\r")


@contextmanager
def tracked(label: str, total: int, write: Writer | None) -> Iterator[Progress | None]:
    """A ``Progress`` while the caller encodes (None without a writer), closed afterwards."""
    progress = Progress(label, total, write) if write is not None and total else None
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()
