"""The one error type a malformed checklist raises: ``FILE:LINE: message``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from pytest_vlcheck.errors import VlcheckUserError


class ChecklistError(VlcheckUserError, ValueError):
    """A checklist problem located at a file and line, shown to users without a traceback.

    ``message`` is the part after ``FILE:LINE: ``; ``str()`` is the whole line.
    """

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = Path(path)
        self.line = line
        self.message = message


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``did you mean 'x'?`` suffix when ``word`` is close to one of ``choices``."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
