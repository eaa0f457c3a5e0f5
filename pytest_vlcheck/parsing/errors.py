"""The one error type a malformed checklist raises: ``FILE:LINE: message``, one per problem."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pytest_vlcheck.errors import VlcheckUserError

SHOWN_ERRORS = 10
"""How many of a file's errors ``render()`` lists (pytest's collection error) before
"... and N more"; ``str()`` and ``vlcheck validate`` give them all."""

T = TypeVar("T")


class ChecklistError(VlcheckUserError, ValueError):
    """Checklist problems, each located at a file and line, shown without a traceback.

    One problem: ``message`` is the part after ``FILE:LINE: ``. A file with several problems
    raises one error carrying them all in ``errors`` (``path``, ``line`` and ``message`` are
    the first one's); ``str()`` is one ``FILE:LINE: message`` line per problem.
    """

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = Path(path)
        self.line = line
        self.message = message
        self.errors: tuple[ChecklistError, ...] = (self,)

    @classmethod
    def combine(cls, errors: Sequence[ChecklistError]) -> ChecklistError:
        """One error carrying every problem of ``errors`` (each may carry several)."""
        flat = tuple(one for error in errors for one in error.errors)
        if len(flat) == 1:
            return flat[0]
        first = flat[0]
        combined = cls(first.path, first.line, first.message)
        combined.errors = flat
        return combined

    def __str__(self) -> str:
        return "\n".join(one.args[0] for one in self.errors)

    def render(self, limit: int = SHOWN_ERRORS) -> str:
        """The first ``limit`` problems, one per line, then how many more there are."""
        lines = [one.args[0] for one in self.errors[:limit]]
        if len(self.errors) > limit:
            lines.append(f"... and {len(self.errors) - limit} more")
        return "\n".join(lines)


class ErrorCollector:
    """Gathers the ``ChecklistError``s of independent parts (tests, examples, keys) so that a
    file reports every problem at once; the same problem found twice is kept once."""

    def __init__(self) -> None:
        self.errors: list[ChecklistError] = []
        self._seen: set[str] = set()

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Run a block; a ``ChecklistError`` in it is recorded and the block abandoned."""
        try:
            yield
        except ChecklistError as exc:
            self.add(exc)

    def attempt(self, parse: Callable[..., T], *args: object, **kwargs: object) -> T | None:
        """``parse(*args, **kwargs)``, or None when it raised a recorded ``ChecklistError``."""
        try:
            return parse(*args, **kwargs)
        except ChecklistError as exc:
            self.add(exc)
            return None

    def add(self, error: ChecklistError) -> None:
        """Record every problem ``error`` carries."""
        for one in error.errors:
            if one.args[0] not in self._seen:
                self._seen.add(one.args[0])
                self.errors.append(one)

    def raise_any(self) -> None:
        """Raise one ``ChecklistError`` carrying everything recorded, if anything was, in
        line order within each file (files in the order their first problem was found)."""
        files: dict[Path, int] = {}
        if self.errors:
            ordered = sorted(
                self.errors, key=lambda e: (files.setdefault(e.path, len(files)), e.line)
            )
            raise ChecklistError.combine(ordered)


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` that ``word`` is probably a misspelling of, if any."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``did you mean 'x'?`` suffix when ``word`` is close to one of ``choices``."""
    close = closest(word, choices)
    return f" (did you mean '{close}'?)" if close else ""
