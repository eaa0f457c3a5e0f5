"""m, the number of test x model items gated in the whole selection (before any sharding or
xdist split), which the gate's Bonferroni correction divides alpha by: so a serial run,
``-n N`` and CI shards gate each item alike."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_vlcheck.gates.decision import GateSettings, entry_of

__all__ = ["count_gated", "count_python_gated"]

Key = tuple[str, str, str]
"""(file relative to the rootdir, test, model)."""


def count_gated(settings: GateSettings, items: Iterable[Key]) -> int:
    """How many checklist items have a baseline entry."""
    return sum(
        1 for file, test, model in items if entry_of(settings, file, test, model) is not None
    )


def count_python_gated(settings: GateSettings, tests: Iterable[Key]) -> int:
    """The baseline entries of selected Python tests: ``tests`` holds (file, test key,
    model); an entry belongs to a test when it is the key itself or one of its named
    ``evaluate`` rows (``KEY::NAME``)."""
    if settings.baseline is None:
        return 0
    names: dict[str, set[str]] = {}
    for entry in settings.baseline.entries:
        names.setdefault(entry.file, set()).add(entry.test)
    return sum(
        1
        for file, key, model in tests
        for name in names.get(file, ())
        if (name == key or name.startswith(f"{key}::"))
        and entry_of(settings, file, name, model) is not None
    )
