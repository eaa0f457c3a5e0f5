"""What every logger offers, and the one error a logger spec gets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pytest_vlcheck.errors import VlcheckUserError


class LoggerSpecError(VlcheckUserError, ValueError):
    """A logger spec that is unknown, malformed, or names a logger that cannot start."""


class Logger(Protocol):
    """Receives each model's scalars once per run, at the run's (or checkpoint's) step."""

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        """Record ``scalars`` at ``step`` (None: the logger's own next step)."""

    def close(self) -> None:
        """Flush; a run the logger started for this process stays open for the next call."""
