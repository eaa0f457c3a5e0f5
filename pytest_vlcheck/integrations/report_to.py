"""The transformers ``Trainer``'s ``report_to`` integrations as vlcheck loggers.

``trainer.log`` would reach every integration, but transformers' TensorBoard, W&B, Comet,
Neptune, ... callbacks prefix every key that does not start with ``eval_`` or ``test_`` with
``train/``: ``vlcheck/...`` would become ``train/vlcheck/...``, one curve under two names
beside ``evaluate(log=...)``, ``--vl-log`` and Lightning. So the callback logs the scalars
itself, under their own names, where those integrations write: the TensorBoard callback's
event folder (``tensorboard:DIR``), the W&B run transformers started (on its step axis,
``train/global_step``) and the active MLflow run (``mlflow``), as ``log=`` specs. An
integration vlcheck cannot write to is named in a warning, with ``log=`` as the way to reach it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["integration_logs"]

_WHERE = "VlcheckCallback"
_MLFLOW = {"mlflow", "dagshub"}  # DagsHub's callback is MLflow's
_NO_SCALARS = {"none", "codecarbon"}


def _wandb_at_global_step(scalars: Mapping[str, float], step: int | None) -> None:
    """Into the W&B run transformers started, on its x axis: transformers logs without
    ``step=`` and plots every key against ``train/global_step``, so an explicit ``step=``
    behind W&B's own counter would be dropped."""
    import wandb

    if wandb.run is not None:
        wandb.run.log({**scalars, "train/global_step": step})


def integration_logs(report_to: Sequence[str], callbacks: Sequence[Any]) -> list[Any]:
    """A ``log=`` spec per ``report_to`` integration vlcheck writes to (``callbacks``, the
    trainer's, hold the TensorBoard callback's folder); a warning naming the others."""
    specs: list[Any] = []
    other = []
    for name in report_to:
        if name == "tensorboard":
            folder = next(
                (
                    getattr(c, "logging_dir", None)
                    for c in callbacks
                    if type(c).__name__ == "TensorBoardCallback"
                ),
                None,
            )
            if folder is None:  # transformers picks its folder when the training begins
                other.append("tensorboard (its folder is chosen when the training begins)")
            else:
                specs.append(f"tensorboard:{folder}")
        elif name == "wandb":
            specs.append(_wandb_at_global_step)
        elif name in _MLFLOW:
            specs.append("mlflow")
        elif name not in _NO_SCALARS:
            other.append(name)
    if other:
        warnings.warn(
            f"{_WHERE}: vlcheck's scalars do not go to report_to {', '.join(other)} (vlcheck "
            "writes to tensorboard, wandb and mlflow); expected log= with a function "
            "(scalars, step) that writes there",
            stacklevel=3,
        )
    return specs
