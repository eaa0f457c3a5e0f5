"""``VlcheckCallback``: capability checklists inside a transformers ``Trainer``.

It evaluates the model being trained (``kwargs["model"]`` of the callback events) with
``pytest_vlcheck.evaluate`` after each of the trainer's own evaluations, or every
``every_n_steps`` optimizer steps. Given the trainer, the run's scalars go through
``trainer.log``, so every ``report_to`` integration (TensorBoard, W&B, MLflow, ...) records
them beside the loss (each from the main process only, as for the loss); without it, pass
``log=`` as for ``evaluate``. Under ``torch.distributed`` every rank evaluates together
(``evaluate`` is collective: each encodes a share) and keeps the same ``runs``; only rank 0
writes and logs through ``log=``. Its arguments are checked when it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from pytest_vlcheck.integrations.arguments import check_callback_arguments
from pytest_vlcheck.integrations.schedule import Schedule
from pytest_vlcheck.run.evaluate import evaluate
from pytest_vlcheck.run.outcome import Run


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
            self._evaluate(state, kwargs.get("model"))

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.schedule.due_after_evaluation(state.global_step):
            self._evaluate(state, kwargs.get("model"))

    def _evaluate(self, state: Any, model: Any) -> None:
        run = evaluate(model, self.checklists, step=state.global_step, **self.options)
        self.runs.append(run)
        if self.trainer is not None:
            self.trainer.log(run.scalars())
