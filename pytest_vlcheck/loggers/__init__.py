"""Experiment loggers: a run's numbers as scalars next to the training loss.

One module per logger behind the ``Logger`` protocol (``log(scalars, step)``, ``close()``);
``specs`` turns a spec (``tensorboard:DIR``, ``wandb``, ``mlflow``, ``jsonl:FILE`` or a
callable) into one, checking cheaply before any scoring; ``scalars`` names the numbers.
"""

from pytest_vlcheck.loggers.protocol import Logger, LoggerKind, LoggerSpecError
from pytest_vlcheck.loggers.scalars import model_scalars, prefixed
from pytest_vlcheck.loggers.specs import LOGGERS, check_logger_spec, open_logger

__all__ = [
    "LOGGERS",
    "Logger",
    "LoggerKind",
    "LoggerSpecError",
    "check_logger_spec",
    "model_scalars",
    "open_logger",
    "prefixed",
]
