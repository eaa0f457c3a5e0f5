"""A one-line progress display while a model encodes images: count, images/s and ETA.

Redrawn in place on a terminal. Where stderr is not a TTY or the ``CI`` environment variable
is set, ``stderr_writer`` gives a ``LogWriter`` instead: whole lines a log keeps, one when a
model starts encoding, a heartbeat every ``HEARTBEAT_S`` and one when it is done, so a cold CI
run does not sit silent for minutes (and looks hung). Under pytest, output capture replaces
stderr while tests run; the plugin passes its capture manager's "suspend" context so the
lines reach the real stderr.
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
HEARTBEAT_S = 30.0
"""In a log, a progress line at most this often."""


@dataclass(frozen=True)
class LogWriter:
    """A writer to a log, not a terminal: whole lines, no redraws."""

    write: Writer

    def __call__(self, text: str) -> None:
        self.write(text)


def stderr_writer(suspend: Suspend = nullcontext) -> Writer:
    """A writer to the real stderr: for redraws on a terminal, a ``LogWriter`` when stderr
    is not one or ``CI`` is set."""
    with suspend():
        stream = sys.stderr
        interactive = bool(getattr(stream, "isatty", lambda: False)())

    def write(text: str) -> None:
        with suspend():
            stream.write(text)
            stream.flush()

    return write if interactive and not os.environ.get("CI") else LogWriter(write)


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


@dataclass
class Heartbeat(Progress):
    """Progress for a log: a line at the start, one every ``HEARTBEAT_S``, one at the end."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._drawn = self.started
        self.write(f"\n[{self.label}] encoding {self.total} images\n")  # off pytest's dots

    def advance(self, count: int) -> None:
        """``count`` more images are encoded; a line when the last one is old enough."""
        self.done += count
        now = self.clock()
        if self.done < self.total and now - self._drawn >= HEARTBEAT_S:
            self._drawn = now
            self.write(self.line(now) + "\n")

    def close(self) -> None:
        """How many were encoded, in how long."""
        elapsed = self.clock() - self.started
        self.write(f"[{self.label}] encoded {self.done}/{self.total} images in {elapsed:.1f} s\n")


@contextmanager
def tracked(label: str, total: int, write: Writer | None) -> Iterator[Progress | None]:
    """A ``Progress`` while the caller encodes (a ``Heartbeat`` for a ``LogWriter``, None
    without a writer), closed afterwards."""
    kind = Heartbeat if isinstance(write, LogWriter) else Progress
    progress = kind(label, total, write) if write is not None and total else None
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()
