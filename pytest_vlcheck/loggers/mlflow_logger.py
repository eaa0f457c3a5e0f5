"""``mlflow``: scalars into the active MLflow run, else one run per process.

The tracking store is MLflow's own setting (``MLFLOW_TRACKING_URI``); a local ``file:``
store needs ``MLFLOW_ALLOW_FILE_STORE=true`` with mlflow-skinny."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_OWN_RUN: list[Any] = []


class MlflowLogger:
    """``mlflow.log_metrics(scalars, step=step)`` in the active or this process's run."""

    def __init__(self) -> None:
        import mlflow

        self.mlflow = mlflow
        if mlflow.active_run() is None:
            if _OWN_RUN:
                mlflow.start_run(run_id=_OWN_RUN[0])
            else:
                _OWN_RUN.append(mlflow.start_run(run_name="vlcheck").info.run_id)

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        self.mlflow.log_metrics(dict(scalars), step=step)

    def close(self) -> None:
        """The run stays open for the process's next call; MLflow ends it at exit."""
