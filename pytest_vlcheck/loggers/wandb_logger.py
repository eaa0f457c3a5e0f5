"""``wandb``: scalars into the active Weights & Biases run, else one run per process.

A training script that called ``wandb.init`` gets the numbers in its own run, beside its
loss; otherwise the first call starts a run (project ``$WANDB_PROJECT``, else ``vlcheck``)
that later calls of the same process reuse. ``WANDB_MODE=offline`` works as usual."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_OWN_RUN: list[Any] = []


class WandbLogger:
    """``run.log(scalars, step=step)`` on the active or this process's run."""

    def __init__(self) -> None:
        import wandb

        if wandb.run is not None:
            self.run = wandb.run
        else:
            if not _OWN_RUN:
                project = os.environ.get("WANDB_PROJECT", "vlcheck")
                _OWN_RUN.append(wandb.init(project=project, job_type="vlcheck"))
            self.run = _OWN_RUN[0]

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        if step is None:
            self.run.log(dict(scalars))
        else:
            self.run.log(dict(scalars), step=step)

    def close(self) -> None:
        """The run stays open for the process's next call; wandb finishes it at exit."""
