"""Bulk loading with Python's cyclic garbage collector paused.

Loading 100,000 examples allocates millions of containers, and each allocation burst makes
the collector walk every object alive so far, again and again: most of the time of a large
checklist went there. Nothing a loader builds is garbage until the load is over, so the
collector waits until then.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run a block with the cyclic collector off; it is back on after, if it was on before
    (a nested pause, or a caller that turned it off itself, is left as it was)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
