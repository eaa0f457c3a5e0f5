"""The watcher's memory across restarts: ``OUT/watch.json``, rewritten atomically.

It lists every checkpoint the watcher settled (evaluated, or skipped as corrupt) with its
outcome, curve row and the baseline its successors gate against, and the one being evaluated
now. A watcher killed at any moment restarts from the last write: a settled checkpoint is
never evaluated again; the one that was being evaluated is evaluated once more (its run never
finished, so nothing of it was kept).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.results.json_checks import JsonChecker, read_json

STATE_FILE = "watch.json"
FORMAT_VERSION = 1
OUTCOMES = ("passed", "no reference", "regressed", "corrupt")


class WatchStateError(VlcheckUserError):
    """``OUT/watch.json`` cannot be resumed from (not the watcher's, or another watch's)."""


class _StateFormatError(ValueError):
    pass


@dataclass(frozen=True)
class Settled:
    """One checkpoint the watcher is done with."""

    file: str
    name: str
    step: int | None
    outcome: str
    line: str
    mean_pass_rate: float | None = None
    baseline: str | None = None
    """The baseline its run saved, relative to OUT (None when corrupt)."""
    rates: dict[str, float | None] = field(default_factory=dict)
    """Its curve row: pass rate per ``FILE::TEST``."""


@dataclass
class WatchState:
    spec: str
    settled: list[Settled] = field(default_factory=list)
    evaluating: str | None = None

    def is_settled(self, file: str) -> bool:
        return any(s.file == file for s in self.settled)

    def save(self, out: Path) -> None:
        document = {
            "vlcheck_watch": FORMAT_VERSION,
            "spec": self.spec,
            "evaluating": self.evaluating,
            "checkpoints": [asdict(s) for s in self.settled],
        }
        atomic_write_text(out / STATE_FILE, json.dumps(document, indent=1) + "\n")

    @classmethod
    def resume(cls, out: Path, spec: str) -> WatchState:
        """The state under ``out``, or a fresh one; another watch's state is refused."""
        path = out / STATE_FILE
        if not path.exists():
            return cls(spec)
        try:
            state = _parsed(read_json(path, "the watcher's state", _StateFormatError), str(path))
        except _StateFormatError as exc:
            raise WatchStateError(
                f"{exc}; expected the state file 'vlcheck watch' writes (remove it, or pick "
                "another --out, to start over)"
            ) from None
        if state.spec != spec:
            raise WatchStateError(
                f"{path}: written by a watch of {state.spec!r}, not {spec!r}; expected the same "
                "SPEC to resume, or another --out for another run"
            )
        return state


def _parsed(doc: Any, source: str) -> WatchState:
    c = JsonChecker(source, _StateFormatError)
    top = c.mapping(doc, "document")
    if top.get("vlcheck_watch") != FORMAT_VERSION:
        raise c.fail("vlcheck_watch", f"expected {FORMAT_VERSION}")
    evaluating = top.get("evaluating")
    if evaluating is not None and not isinstance(evaluating, str):
        raise c.fail("evaluating", f"expected a path or null, got {evaluating!r}")
    rows = c.listing(top.get("checkpoints"), "checkpoints")
    return WatchState(
        c.text(top, "spec", "document"),
        [_settled(c, raw, f"checkpoints[{i}]") for i, raw in enumerate(rows)],
        evaluating,
    )


def _settled(c: JsonChecker, raw: Any, where: str) -> Settled:
    row = c.mapping(raw, where)
    outcome = c.text(row, "outcome", where)
    if outcome not in OUTCOMES:
        raise c.fail(f"{where}.outcome", f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    step = row.get("step")
    rates = c.mapping(row.get("rates", {}), f"{where}.rates")
    baseline = row.get("baseline")
    if not (baseline is None or isinstance(baseline, str)):
        raise c.fail(f"{where}.baseline", f"expected a path or null, got {baseline!r}")
    return Settled(
        file=c.text(row, "file", where),
        name=c.text(row, "name", where),
        step=None if step is None else c.integer(step, f"{where}.step"),
        outcome=outcome,
        line=c.text(row, "line", where),
        mean_pass_rate=c.number(row.get("mean_pass_rate"), f"{where}.mean_pass_rate"),
        baseline=baseline,
        rates={str(k): c.number(v, f"{where}.rates.{k}") for k, v in rates.items()},
    )
