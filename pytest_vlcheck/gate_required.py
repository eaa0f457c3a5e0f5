"""A gate that gates nothing is red: a run given ``--vl-baseline`` whose baseline gates none
of the selected items (after ``-k``, ``-m`` and ``--vl-shard``) is a usage error, so a CI job
that ``cd``s elsewhere, or names another suite's baseline, cannot pass on thresholds alone.

An item is gated when the baseline has an entry for it that shares an example id with it (a
Python ``vl_model`` test, whose examples are known only when it runs: an entry); an item the
gate pairs but cannot decide counts as gated. A partial match stays the warning under the
matrix (``gates.wording.not_gated_warnings``). ``--vl-allow-no-gate`` (ini
``vl_allow_no_gate``) runs ungated, for a first run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from pytest_vlcheck import fixture
from pytest_vlcheck.gates.counting import count_python_gated
from pytest_vlcheck.gates.decision import entry_of
from pytest_vlcheck.items import SESSION_KEY, ChecklistItem

OPT_OUT = "--vl-allow-no-gate"
INI_OPT_OUT = "vl_allow_no_gate"


def add_ini(parser: pytest.Parser) -> None:
    """The ini twin of ``--vl-allow-no-gate`` (the option itself is in ``run.options``)."""
    flag: Literal["bool"] = "bool"
    parser.addini(INI_OPT_OUT, f"default for {OPT_OUT}", type=flag, default=False)


def no_gate_problem(config: pytest.Config, items: Sequence[pytest.Item]) -> str | None:
    """The one-line message when a baseline is given and gates none of ``items``, naming the
    baseline's paths against this run's (the usual cause: another rootdir)."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None or config.option.collectonly:
        return None
    gates = state.settings.gates
    if gates.baseline is None or config.option.vl_allow_no_gate or config.getini(INI_OPT_OUT):
        return None
    checklist = [
        (i.test, i.model) for i in items if isinstance(i, ChecklistItem) and i.model is not None
    ]
    python = fixture.python_gate_keys(state, items)
    if (not checklist and not python) or count_python_gated(gates, python):
        return None
    unpaired = 0
    for test, model in checklist:
        entry = entry_of(gates, state.relative(test.file), test.id, model)
        if entry is not None and any(e.id in entry.outcomes for e in test.examples):
            return None
        unpaired += entry is not None
    count = len(checklist) + len(python)
    ours = sorted({state.relative(test.file) for test, _ in checklist} | {k[0] for k in python})
    theirs = sorted({entry.file for entry in gates.baseline.entries})
    where = config.option.vl_baseline or config.getini("vl_baseline")
    why = (
        f"its entries for {_few(ours)} share no example id with this run's (the example ids "
        "changed since it was saved: save a new baseline)"
        if unpaired
        else f"it has entries for {_few(theirs)}, this run's items are in {_few(ours)} (entry "
        f"paths are relative to the rootdir, {state.settings.rootdir}: run from the folder the "
        "baseline was saved in)"
    )
    return (
        f"--vl-baseline {where} gates none of the {count} selected item{'s' * (count != 1)}: "
        f"{why}; {OPT_OUT} runs them ungated (a first run)"
    )


def _few(paths: list[str]) -> str:
    """The first three paths, and how many more."""
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return ", ".join(paths[:3]) + more if paths else "nothing"
