"""``VlcheckLightningCallback``: capability checklists inside a Lightning ``Trainer``.

The CLIP model is the LightningModule's attribute ``model_attribute`` (``model`` by default:
``self.model = open_clip.create_model(...)`` in the module's ``__init__``). It is evaluated
with ``pytest_vlcheck.evaluate`` after each validation epoch, or every ``every_n_steps``
optimizer steps, and the run's scalars go to every logger of the trainer, at the step
Lightning logs its own metrics of that moment (``lightning_step``: the validation loss and
vlcheck's points share an x; Lightning's loggers write from global rank 0 only). Under
``torch.distributed`` every rank evaluates together (``evaluate`` is collective: each encodes a
share) and keeps the same ``runs``. Its arguments are checked when it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.integrations.arguments import check_callback_arguments
from pytest_vlcheck.integrations.schedule import Schedule
from pytest_vlcheck.run.evaluate import evaluate
from pytest_vlcheck.run.outcome import Run


class VlcheckLightningCallback(Callback):
    """``Trainer(callbacks=[VlcheckLightningCallback("checklists/", preprocess=preprocess,
    tokenizer=tokenizer)])``; ``evaluate_options`` are ``evaluate``'s keywords. ``runs``
    keeps each evaluation's ``Run``."""

    def __init__(
        self,
        checklists: str | Path | Sequence[str | Path],
        *,
        model_attribute: str = "model",
        every_n_steps: int | None = None,
        **evaluate_options: Any,
    ) -> None:
        self.checklists = checklists
        self.model_attribute = model_attribute
        self.schedule = Schedule(every_n_steps)
        check_callback_arguments("VlcheckLightningCallback", checklists, evaluate_options)
        self.options = evaluate_options
        self.runs: list[Run] = []

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.schedule.due_after_step(trainer.global_step):
            self._evaluate(trainer, pl_module)

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking and self.schedule.due_after_evaluation(trainer.global_step):
            self._evaluate(trainer, pl_module)

    def _evaluate(self, trainer: Any, pl_module: Any) -> None:
        model = getattr(pl_module, self.model_attribute, None)
        if model is None:
            raise VlcheckUserError(
                f"VlcheckLightningCallback: {type(pl_module).__name__} has no attribute "
                f"{self.model_attribute!r}; expected the CLIP model there, or "
                "model_attribute= naming where it is"
            )
        step = lightning_step(trainer)
        run = evaluate(model, self.checklists, step=step, **self.options)
        self.runs.append(run)
        for logger in trainer.loggers:
            logger.log_metrics(run.scalars(), step=step)


def lightning_step(trainer: Any) -> int:
    """The step Lightning's own metrics are logged at: the optimizer steps taken before the
    current one (``trainer.global_step - 1`` in the hooks after an optimizer step and in a
    validation run inside training), Lightning's logger connector's step, as its
    ``LearningRateMonitor`` uses it; ``global_step`` would sit one step to the right."""
    return int(trainer.fit_loop.epoch_loop._batches_that_stepped)
