"""What every logger offers, what a kind of logger spec declares, and the one error a logger
spec gets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


def _nothing_to_check(spec: str, argument: str, where: str) -> None:
    """A kind with no cheap check: problems show when it starts."""


@dataclass(frozen=True)
class LoggerKind:
    """One kind of ``--vl-log`` spec: ``NAME`` or ``NAME:ARGUMENT``.

    ``start(argument)`` makes the logger after the run (``argument`` is ``""`` for a kind
    that takes none); ``argument`` names what follows ``NAME:`` in messages (``DIR``), None
    for a kind that takes nothing; ``package`` is a Python package it needs, checked to be
    installed before any scoring, as ``check(spec, argument, where)`` checks the rest that
    is cheap to know (raising ``LoggerSpecError`` that names ``where`` and ``spec``).
    """

    name: str
    start: Callable[[str], Logger]
    argument: str | None = None
    package: str | None = None
    check: Callable[[str, str, str], None] = _nothing_to_check

    @property
    def usage(self) -> str:
        """How a spec of this kind is written: ``tensorboard:DIR``, ``wandb``."""
        return f"{self.name}:{self.argument}" if self.argument else self.name
