"""The watch loop: expand the glob, wait for each checkpoint to be whole, evaluate it once in
step order, gate it, record it, and stop after ``idle_exit`` seconds with nothing new.

Each checkpoint is one ``evaluate`` call (the same scoring, gate and outputs as pytest) named
as a glob run names it (``run@epoch_3``), at its step, with its report and baseline under
``OUT/checkpoints/NAME/``; the state file is written before (``evaluating``) and after, so a
restart resumes where the last write left off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_vlcheck.errors import DeviceError, ModelLoadError, SettingsError
from pytest_vlcheck.models.checkpoints import (
    glob_members,
    is_glob,
    natural_key,
    unstepped,
    weights_part,
)
from pytest_vlcheck.models.protocol import ModelSpec
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.run.checklists import checklist_files, given_paths, load_tests
from pytest_vlcheck.run.evaluate import evaluate
from pytest_vlcheck.run.settings import KeywordOptions, build_settings
from pytest_vlcheck.watch.complete import SettleClock, completeness
from pytest_vlcheck.watch.curves import CURVES_FILE, CurveRow, rows_of_matrix, write_curves
from pytest_vlcheck.watch.lines import checkpoint_line, outcome_of
from pytest_vlcheck.watch.state import Settled, WatchState

GATES = ("previous", "best")
"""``--gate`` by name; anything else is a baseline file."""


@dataclass(frozen=True)
class WatchOptions:
    spec: str
    checklists: tuple[str, ...]
    out: Path
    gate: str = "previous"
    idle_exit: float | None = None
    settle: float = 10.0
    poll: float = 2.0
    log: tuple[str, ...] = ()
    run_options: Mapping[str, Any] = field(default_factory=dict)
    """``evaluate``'s keyword options (``device``, ``batch_size``, ``max_drop``, ...)."""


def template_of(options: WatchOptions) -> ModelSpec:
    """The SPEC as parsed, checked to hold a checkpoint glob, with every other option and the
    checklists checked as ``evaluate`` would (before waiting for the first checkpoint)."""
    template = parse_spec(options.spec)
    weights = weights_part(template.scheme, template.body)[1]
    if not weights or not is_glob(weights):
        raise SettingsError(
            f"SPEC {options.spec!r} holds no checkpoint glob; expected e.g. "
            "'run=open_clip:cfg.json@ckpts/epoch_*.safetensors', 'hf:out/checkpoint-*' or "
            "'vqa:out/checkpoint-*'"
        )
    baseline = None if options.gate in GATES else options.gate
    keywords = {k: v for k, v in options.run_options.items() if k != "select"}
    keywords |= {"log": list(options.log), "baseline": baseline}
    settings = build_settings(KeywordOptions(keywords))
    load_tests(checklist_files(given_paths(list(options.checklists))), settings.image_root)
    return template


class Watcher:
    """One watch over one SPEC; ``say`` prints a checkpoint's line, ``warn`` a warning."""

    def __init__(
        self,
        options: WatchOptions,
        say: Callable[[str], None],
        warn: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.say, self.warn, self.clock, self.sleep = say, warn, clock, sleep
        self.template = template_of(options)
        options.out.mkdir(exist_ok=True)
        self.state = WatchState.resume(options.out, options.spec)
        self.settle_clock = SettleClock(options.settle)

    def run(self) -> int:
        """Watch until ``idle_exit`` seconds pass with nothing new: 1 when a checkpoint
        regressed (in this watch or before a restart), else 0."""
        if self.state.evaluating is not None:
            self.warn(
                f"{self.state.evaluating}: its evaluation was interrupted (the watcher "
                "stopped); evaluating it again"
            )
        last_activity = self.clock()
        while True:
            if self._poll():
                last_activity = self.clock()
            idle = self.options.idle_exit
            if idle is not None and self.clock() - last_activity >= idle:
                break
            self.sleep(self.options.poll)
        return int(any(s.outcome == "regressed" for s in self.state.settled))

    def _poll(self) -> bool:
        """Settle every checkpoint that is whole now, in step order; True when one was."""
        settled_one = False
        for member in glob_members(self.template):
            file = weights_part(member.scheme, member.body)[1]
            if self.state.is_settled(file):
                continue
            status, why = completeness(Path(file), self.settle_clock, self.clock())
            if status == "writing":
                continue
            if status == "corrupt":
                self._skip(member, file, why)
            else:
                self._evaluate(member, file)
            settled_one = True
        return settled_one

    def _skip(self, member: ModelSpec, file: str, why: str) -> None:
        line = f"{file}: cannot be read ({why}); skipped"
        self.warn(line)
        self._record(Settled(file, member.name, member.step, "corrupt", line))

    def _evaluate(self, member: ModelSpec, file: str) -> None:
        if self.options.log and unstepped([member]):
            raise SettingsError(f"--log: {unstepped([member])}; a logger's curve needs them")
        reference = self._reference(file)
        folder = self.options.out / "checkpoints" / member.name
        self.state.evaluating = file
        self.state.save(self.options.out)
        try:
            run = evaluate(
                member.text,
                list(self.options.checklists),
                name=member.name,
                step=member.step,
                log=list(self.options.log),
                report_dir=folder,
                baseline=reference[1],
                save_baseline=folder / "baseline.json",
                **self.options.run_options,
            )
        except DeviceError:
            raise
        except ModelLoadError as exc:
            self._skip(member, file, str(exc).splitlines()[0])
            return
        outcome = outcome_of(run, gated=reference[1] is not None)
        line = checkpoint_line(Path(file).name, run, outcome, reference[0])
        (row,) = rows_of_matrix(run.to_json())
        scalars = run.scalars()
        self._record(
            Settled(
                file,
                member.name,
                member.step,
                outcome,
                line,
                mean_pass_rate=scalars.get("vlcheck/summary/mean_pass_rate"),
                baseline=(folder / "baseline.json").relative_to(self.options.out).as_posix(),
                rates=dict(row.rates),
            )
        )
        self.say(line)

    def _reference(self, file: str) -> tuple[str | None, Path | None]:
        """(what the line names, the baseline file) this checkpoint is gated against:
        ``previous``: the nearest settled checkpoint before it in step order; ``best``: the
        highest mean pass rate so far (the later on a tie); else the given baseline."""
        gate = self.options.gate
        if gate not in GATES:
            return Path(gate).name, Path(gate)
        measured = [s for s in self.state.settled if s.baseline is not None]
        if gate == "previous":
            before = [s for s in measured if natural_key(s.file) < natural_key(file)]
            chosen = max(before, key=lambda s: natural_key(s.file), default=None)
        else:
            chosen = max(
                measured,
                key=lambda s: (s.mean_pass_rate or 0.0, natural_key(s.file)),
                default=None,
            )
        if chosen is None:
            return None, None
        assert chosen.baseline is not None
        return Path(chosen.file).name, self.options.out / chosen.baseline

    def _record(self, settled: Settled) -> None:
        """Keep a settled checkpoint: the state, then the curves (in step order)."""
        self.state.settled.append(settled)
        self.state.evaluating = None
        self.state.save(self.options.out)
        done = sorted(
            (s for s in self.state.settled if s.outcome != "corrupt"),
            key=lambda s: natural_key(s.file),
        )
        rows = [CurveRow(s.step, s.file, s.rates) for s in done]
        write_curves(self.options.out / CURVES_FILE, rows)
