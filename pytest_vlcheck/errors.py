"""The errors vlcheck raises on purpose: a user's mistake, told in one complete message.

Every deliberate user error is a ``VlcheckUserError`` whose message already says what is
wrong, where (``FILE:LINE`` for files; the spec or option otherwise) and what is expected, so
the pytest layer and the ``vlcheck`` command show ``render()`` and never a traceback. Anything
else that escapes is a bug in vlcheck and keeps its full traceback.

The one exception to "no traceback" is ``UserCodeError``: the user's own ``py:`` factory or
scorer raised, and they need their own stack, so it carries a traceback trimmed to their
frames (vlcheck's and importlib's frames are dropped).

Several classes also derive from the built-in type that the same failure raised before this
module existed (``ValueError``, ``FileNotFoundError``, ``OSError``), so code that catches
those keeps working.
"""

from __future__ import annotations

import traceback
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_IMPORTLIB_DIR = Path(traceback.__file__).resolve().parent / "importlib"


class VlcheckUserError(Exception):
    """A mistake in what the user gave vlcheck; ``str()`` is the whole, final message."""

    def render(self) -> str:
        """What to show the user: the message (subclasses may add lines)."""
        return str(self)


class SettingsError(VlcheckUserError, ValueError):
    """An option, keyword argument or checklist path that cannot run (``evaluate``'s and
    pytest's): ``str()`` names the option and what is expected."""


class ModelSpecError(VlcheckUserError, ValueError):
    """A ``--vl-model`` value that cannot be understood."""


class ModelLoadError(VlcheckUserError, ValueError):
    """A model spec was understood but its scorer could not be made."""


class ModelFileNotFoundError(ModelLoadError, FileNotFoundError):
    """A weights file, model-config JSON or model directory named by a spec does not exist."""


class WeightsUnavailableError(ModelLoadError, OSError):
    """Hub weights are not in the local cache and cannot be downloaded now."""


class DeviceError(ModelLoadError):
    """``--vl-device`` or ``--vl-precision`` asks for something this machine cannot do."""


class ScorerProtocolError(VlcheckUserError, ValueError):
    """A scorer broke the protocol: missing methods, wrong shapes, NaN or infinite values."""


class CacheMismatchError(VlcheckUserError):
    """Embedding-cache rows that cannot belong to the model they are filed under."""


class ImageError(VlcheckUserError):
    """An image's pixels cannot be had; ``reason`` is the short per-image explanation."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UserCodeError(VlcheckUserError):
    """The user's own code (a ``py:`` factory or scorer, an entry point) raised.

    ``str()`` is one line naming what was called and the exception; ``render()`` adds the
    traceback trimmed to the user's frames.
    """

    def __init__(self, message: str, trimmed_traceback: str) -> None:
        super().__init__(message)
        self.trimmed_traceback = trimmed_traceback

    @classmethod
    def from_exception(cls, exc: BaseException, what: str) -> UserCodeError:
        """Wrap ``exc``, raised by the user's code while doing ``what`` (e.g.
        ``"py:my_scorers:make: the factory make()"``); keep only the user's frames."""
        detail = " ".join(str(exc).split())
        message = f"{what} raised {type(exc).__name__}" + (f": {detail}" if detail else "")
        error = cls(message, trimmed_traceback(exc))
        error.__cause__ = exc
        return error

    def render(self) -> str:
        """The message, then the user's part of the traceback."""
        return f"{self}\n{self.trimmed_traceback}" if self.trimmed_traceback else str(self)


def trimmed_traceback(exc: BaseException) -> str:
    """``exc``'s traceback without vlcheck's and importlib's frames, in Python's format."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not _is_internal(frame.filename)
    ]
    lines = traceback.format_exception_only(type(exc), exc)
    if frames:
        lines = [
            "Traceback (most recent call last; your code only):\n",
            *traceback.StackSummary.from_list(frames).format(),
            *lines,
        ]
    return "".join(lines).rstrip("\n")


def user_frame(exc: BaseException) -> str:
    """Where the user's code raised ``exc``, as ``FILE:LINE``: the deepest frame outside
    vlcheck, importlib and installed packages (the line a user edits), else the deepest frame
    outside vlcheck; "" when every frame is vlcheck's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_internal(f.filename)]
    own = [f for f in frames if not _is_installed(f.filename)]
    chosen = own or frames
    return f"{chosen[-1].filename}:{chosen[-1].lineno}" if chosen else ""


def _is_installed(filename: str) -> bool:
    """A frame of an installed package or of Python's own library."""
    parts = Path(filename).parts
    return "site-packages" in parts or "dist-packages" in parts or filename.startswith("<")


def _is_internal(filename: str) -> bool:
    """vlcheck's own files, importlib (Python's or frozen): not the user's stack."""
    if filename.startswith("<frozen importlib"):
        return True
    path = Path(filename).resolve()
    return path.is_relative_to(_PACKAGE_DIR) or path.is_relative_to(_IMPORTLIB_DIR)
