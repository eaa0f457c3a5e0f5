"""Capability curves while ``tiny`` trains: ``pytest_vlcheck.evaluate`` every N steps.

The image tower uses BatchNorm, whose running statistics lag the weights during training (in
eval mode the model scores near chance on shapes until the final recalibration). So the
probe evaluates a twin: the training model's weights are copied into it, its BatchNorm
statistics are recomputed over the same fresh batches the final recalibration uses, and
``evaluate`` scores it. Each point of a curve is then the model as it would ship if training
stopped there. The twin is one object for the whole run, so ``evaluate`` keeps its rendered
and preprocessed images between calls and re-encodes only because the weights changed.

Nothing here touches the training run's random streams: the twin is a deep copy (no
initialisation draws), recalibration batches come from their own seeded sampler, and torch's
global RNG is forked around each evaluation, so a run with ``--eval-every`` writes the same
weights, bit for bit, as one without.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EvalSettings:
    """What to evaluate and where to log it; none of it changes the weights, so none of it is
    in the weights' metadata."""

    every: int = 0
    checklists: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    log: tuple[str, ...] = ()


@dataclass
class CapabilityCurve:
    """Pass rate per test at each evaluated step, in step order."""

    steps: list[int] = field(default_factory=list)
    rates: dict[str, list[float | None]] = field(default_factory=dict)

    def add(self, step: int, rates: dict[str, float]) -> None:
        """One evaluation's pass rates (a test unmeasured at a step gets None there)."""
        for test in rates:  # in the run's order, new tests last
            self.rates.setdefault(test, [None] * len(self.steps))
        self.steps.append(step)
        for test, values in self.rates.items():
            values.append(rates.get(test))

    def markdown(self) -> list[str]:
        """A table: one row per test, one column per evaluated step."""
        if not self.steps:
            return []
        lines = [
            "| test | " + " | ".join(str(s) for s in self.steps) + " |",
            "|---|" + "---|" * len(self.steps),
        ]
        for test, values in self.rates.items():
            cells = ["" if v is None else f"{v:.0%}" for v in values]
            lines.append(f"| `{test}` | " + " | ".join(cells) + " |")
        return lines


class InLoopProbe:
    """Evaluates a recalibrated twin of the training model every ``settings.every`` steps."""

    def __init__(
        self,
        model: Any,
        settings: EvalSettings,
        *,
        preprocess: Callable[[Any], Any],
        tokenizer: Callable[[list[str]], Any],
        recalibrate: Callable[[Any], None],
    ) -> None:
        self.settings = settings
        self.curve = CapabilityCurve()
        self._twin = copy.deepcopy(model)
        self._preprocess = preprocess
        self._tokenizer = tokenizer
        self._recalibrate = recalibrate

    def due(self, step: int, last: int) -> bool:
        """Whether ``step`` (1-based, after its update) is evaluated: every N, and the last."""
        every = self.settings.every
        return every > 0 and (step % every == 0 or step == last)

    def __call__(self, step: int, model: Any) -> str:
        """Evaluate the weights ``model`` has after ``step`` steps; one line for the log."""
        import torch

        from pytest_vlcheck import evaluate

        with torch.random.fork_rng(devices=[]):
            self._twin.load_state_dict(model.state_dict())
            self._recalibrate(self._twin)
            run = evaluate(
                self._twin,
                list(self.settings.checklists),
                bundled=not self.settings.checklists,
                select=list(self.settings.select) or None,
                preprocess=self._preprocess,
                tokenizer=self._tokenizer,
                name="tiny",
                step=step,
                log=list(self.settings.log) or None,
                device="cpu",
            )
        measured = [r for r in run.results if r.n]
        self.curve.add(step, {_label(r.file, r.test): r.pass_rate for r in measured})
        passed = sum(r.status == "passed" for r in measured)
        mean = sum(r.pass_rate for r in measured) / max(1, len(measured))
        return (
            f"eval step {step}: {passed} of {len(measured)} tests passed, mean pass rate {mean:.1%}"
        )


def _label(file: str, test: str) -> str:
    """``attribute::size``: the checklist's name and the test's id (ids repeat across files)."""
    return f"{Path(file).stem.removeprefix('bundled:')}::{test}"
