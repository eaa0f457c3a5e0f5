"""Ctrl-C ends a run at once (measured in ``benchmarks/interrupt.py``). Two costs stood
between SIGINT and the exit:

- pytest prints the interrupted traceback with every frame's arguments, and below pytest
  those are batches of image tensors and runners holding thousands of embeddings: seconds of
  formatting. The frames below pytest's own (the engine, the models, torch) are dropped from
  that traceback; where the run was stopped is still the last pytest frame, and a user's own
  test module frames stay.
- pytest runs five full garbage collections when a session ends, each walking every object
  torch, the backends and the collected checklists made: seconds more. What is alive when
  collection ends lives to the end, so it is frozen out of the collector's sight then.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

_PACKAGE = Path(__file__).resolve().parent
_LIBRARIES = ("torch", "torchvision", "open_clip", "transformers", "numpy", "PIL")


def trim_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Keep the interrupted traceback's frames that are cheap to show and tell the user
    something: pytest's and the user's, not ours or the libraries' we call."""
    kept = excinfo.traceback.filter(lambda entry: not _below_pytest(Path(str(entry.path))))
    if len(kept):
        excinfo.traceback = kept


def _below_pytest(path: Path) -> bool:
    """Our package, a library we call (under site-packages), or the thread pools."""
    if _PACKAGE in path.parents:
        return True
    parts = path.parts
    libraries = any(
        part == "site-packages" and parts[i + 1] in _LIBRARIES for i, part in enumerate(parts[:-1])
    )
    return libraries or "concurrent" in parts


def freeze_collected() -> None:
    """Move every object alive now (modules, the collected checklists) out of the garbage
    collector's walks (``gc.freeze``): they live as long as the session does."""
    gc.freeze()


def thaw_earlier_session() -> None:
    """Give back to the collector what an earlier session in this process froze (pytester
    runs sessions in-process one after another), so a finished session's objects can go."""
    gc.unfreeze()
