"""``VlcheckCallback``: capability checklists inside a transformers ``Trainer``.

It evaluates the model being trained (``kwargs["model"]`` of the callback events) with
``pytest_vlcheck.evaluate`` after each of the trainer's own evaluations, or every
``every_n_steps`` optimizer steps. Given the trainer, the run's scalars go, under their own
names (``vlcheck/...``), to where its ``report_to`` integrations write (TensorBoard, W&B,
MLflow; ``report_to``), from the main process only, at the trainer's global step; not through
``trainer.log``, whose integrations would name them ``train/vlcheck/...``. Without it, pass
``log=`` as for ``evaluate``. Under ``torch.distributed`` every rank evaluates together
(``evaluate`` is collective: each encodes a share) and keeps the same ``runs``; only rank 0
writes and logs. Its arguments are checked when it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from pytest_vlcheck.integrations.arguments import check_callback_arguments
from pytest_vlcheck.integrations.report_to import integration_logs
from pytest_vlcheck.integrations.schedule import Schedule
from pytest_vlcheck.run.evaluate import evaluate
from pytest_vlcheck.run.outcome import Run
from pytest_vlcheck.run.sinks import Loggers


class VlcheckCallback(TrainerCallback):
    """``Trainer(..., callbacks=[VlcheckCallback("checklists/", preprocess=processor)])``;
    ``evaluate_options`` are ``evaluate``'s keywords (``preprocess``, ``select``, ``log``,
    ``baseline``, ``batch_size``, ...). ``runs`` keeps each evaluation's ``Run``."""

    def __init__(
        self,
        checklists: str | Path | Sequence[str | Path],
        *,
        trainer: Any = None,
        every_n_steps: int | None = None,
        **evaluate_options: Any,
    ) -> None:
        self.checklists = checklists
        self.trainer = trainer
        self.schedule = Schedule(every_n_steps)
        check_callback_arguments("VlcheckCallback", checklists, evaluate_options)
        self.options = evaluate_options
        self.runs: list[Run] = []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.schedule.due_after_step(state.global_step):
            self._evaluate(args, state, kwargs.get("model"))

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.schedule.due_after_evaluation(state.global_step):
            self._evaluate(args, state, kwargs.get("model"))

    def _evaluate(self, args: Any, state: Any, model: Any) -> None:
        run = evaluate(model, self.checklists, step=state.global_step, **self.options)
        self.runs.append(run)
        if self.trainer is not None and state.is_world_process_zero:
            callbacks = self.trainer.callback_handler.callbacks
            Loggers(tuple(integration_logs(args.report_to, callbacks))).emit(run)
