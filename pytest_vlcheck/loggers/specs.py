"""Logger specs: ``tensorboard:DIR``, ``wandb``, ``mlflow``, ``jsonl:FILE``, a kind an
installed package registers in the ``pytest_vlcheck.loggers`` entry-point group (a
``LoggerKind``, docs/extending.md), or a callable ``(scalars, step)``.

``check_logger_spec`` runs before any scoring and catches what can be known cheaply (an
unknown kind, a missing argument or package, a path of the wrong kind, W&B online without a
key, an MLflow URI of an unknown scheme); ``open_logger`` starts the logger after the run, so
a logger that still cannot start costs no report (the files are written first).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import netrc
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pytest_vlcheck.loggers.protocol import Logger, LoggerKind, LoggerSpecError
from pytest_vlcheck.registry import PluginError, Registry, check_named

ENTRY_POINT_GROUP = "pytest_vlcheck.loggers"
_MLFLOW_SCHEMES = {"", "file", "http", "https", "databricks", "sqlite", "postgresql", "mysql"}


class CallableLogger:
    """A function ``(scalars, step)`` as a logger."""

    def __init__(self, function: Callable[[dict[str, float], int | None], Any]) -> None:
        self.function = function

    def log(self, scalars: Mapping[str, float], step: int | None) -> None:
        self.function(dict(scalars), step)

    def close(self) -> None:
        """A function holds nothing open."""


def _expected() -> str:
    kinds = [LOGGERS[name].usage for name in LOGGERS.builtin_names] + list(LOGGERS.plugins())
    return f"expected one of {', '.join(kinds)}, or a callable (scalars, step)"


def _split(spec: Any, where: str) -> tuple[LoggerKind, str]:
    if not isinstance(spec, str):
        raise LoggerSpecError(f"{where} {spec!r}: not a logger; {_expected()}")
    name, _, argument = spec.partition(":")
    if name not in LOGGERS:
        raise LoggerSpecError(f"{where} {spec}: unknown logger {name!r}; {_expected()}")
    try:
        kind = LOGGERS[name]
    except PluginError as exc:  # an installed logger that cannot be imported or is not one
        raise LoggerSpecError(f"{where} {spec}: {exc}") from None
    if kind.argument and not argument:
        raise LoggerSpecError(f"{where} {spec}: no {kind.argument} given; expected {kind.usage}")
    if not kind.argument and argument:
        raise LoggerSpecError(
            f"{where} {spec}: {name} takes no argument; expected '{name}' (configured by its "
            "own environment variables)"
        )
    return kind, argument


def check_logger_spec(spec: Any, where: str) -> None:
    """Raise ``LoggerSpecError`` naming ``where`` (``--vl-log``, ``log=``) for a spec that
    cannot work; it imports nothing heavy."""
    if callable(spec):
        return
    kind, argument = _split(spec, where)
    if kind.package is not None and not _installed(kind.package):
        install = "'pytest-vlcheck[loggers]'" if LOGGERS.is_builtin(kind.name) else kind.package
        raise LoggerSpecError(
            f"{where} {spec}: the {kind.package} package is not installed; expected "
            f"pip install {install}"
        )
    kind.check(spec, argument, where)


def _installed(package: str) -> bool:
    """Importable, without importing it (or already imported, e.g. by the training script)."""
    return package in sys.modules or importlib.util.find_spec(package) is not None


def _check_folder(spec: str, argument: str, where: str) -> None:
    path = Path(argument)
    if path.exists() and not path.is_dir():
        raise LoggerSpecError(f"{where} {spec}: {path} is a file; expected a folder for events")
    problem = _unwritable(path)
    if problem:
        raise LoggerSpecError(f"{where} {spec}: {problem}; expected a folder events can go in")
    try:
        importlib.import_module("tensorboard")
    except Exception as exc:  # an install that is there but broken: say so now, not at the end
        raise LoggerSpecError(
            f"{where} {spec}: the tensorboard package cannot be imported ({first_line(exc)}); "
            "expected a working install: pip install 'pytest-vlcheck[loggers]'"
        ) from None


def _check_file(spec: str, argument: str, where: str) -> None:
    path = Path(argument)
    if path.is_dir():
        raise LoggerSpecError(f"{where} {spec}: {path} is a folder; expected a file to append to")
    if path.is_symlink() and not path.exists():
        raise LoggerSpecError(
            f"{where} {spec}: {path} is a symbolic link to {os.readlink(path)}, which does not "
            "exist; expected a file to append to, or nothing there"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise LoggerSpecError(f"{where} {spec}: {path} is read-only; expected a file to append to")
    if not path.parent.exists():
        raise LoggerSpecError(
            f"{where} {spec}: folder {path.parent} does not exist; expected an existing folder"
        )
    problem = _unwritable(path.parent)
    if problem:
        raise LoggerSpecError(f"{where} {spec}: {problem}; expected a folder to write the file in")


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` (made, with its missing parents, when the logger starts) cannot hold
    new files: the nearest folder that exists is a file, a dangling link, or refuses a probe
    file."""
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            return f"{existing} is a symbolic link to {os.readlink(existing)}, which does not exist"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:  # a real write: permission bits say yes to root under /proc, and on a read-only mount
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".vlcheck-probe-"):
            pass
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"{existing} is read-only"
        return f"{existing} cannot hold new files ({exc.strerror or exc})"
    return None


def first_line(exc: BaseException) -> str:
    """An exception as one line: its type, and its message's first line."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _check_wandb(spec: str, argument: str, where: str) -> None:
    """Online W&B needs a key (``WANDB_API_KEY`` or ``wandb login``'s netrc entry)."""
    if os.environ.get("WANDB_MODE", "online") in ("offline", "disabled", "dryrun"):
        return
    if os.environ.get("WANDB_API_KEY"):
        return
    try:
        host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
        if netrc.netrc().authenticators(host or ""):
            return
    except (OSError, netrc.NetrcParseError):
        pass
    raise LoggerSpecError(
        f"{where} {spec}: W&B is online and has no API key; expected WANDB_API_KEY, "
        "'wandb login', or WANDB_MODE=offline"
    )


def _check_mlflow(spec: str, argument: str, where: str) -> None:
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    scheme = urlparse(uri).scheme.split("+")[0]
    if len(scheme) > 1 and scheme not in _MLFLOW_SCHEMES:
        raise LoggerSpecError(
            f"{where} {spec}: MLFLOW_TRACKING_URI {uri!r} has an unknown scheme; expected "
            f"one of {', '.join(sorted(s for s in _MLFLOW_SCHEMES if s))}, or a folder"
        )


def open_logger(spec: Any, where: str) -> Logger:
    """Start the logger a spec names; one line naming ``where`` when it cannot start."""
    if callable(spec):
        return CallableLogger(spec)
    kind, argument = _split(spec, where)
    try:
        return kind.start(argument)
    except LoggerSpecError:
        raise
    except Exception as exc:  # the logger library's own failure, told in one line
        reason = first_line(exc)
        raise LoggerSpecError(f"{where} {spec}: cannot start the logger: {reason}") from None


def _start_tensorboard(argument: str) -> Logger:
    from pytest_vlcheck.loggers.tensorboard_logger import TensorBoardLogger

    return TensorBoardLogger(Path(argument))


def _start_wandb(argument: str) -> Logger:
    from pytest_vlcheck.loggers.wandb_logger import WandbLogger

    return WandbLogger()


def _start_mlflow(argument: str) -> Logger:
    from pytest_vlcheck.loggers.mlflow_logger import MlflowLogger

    return MlflowLogger()


def _start_jsonl(argument: str) -> Logger:
    from pytest_vlcheck.loggers.jsonl_logger import JsonlLogger

    return JsonlLogger(Path(argument))


TENSORBOARD = LoggerKind("tensorboard", _start_tensorboard, "DIR", "tensorboard", _check_folder)
WANDB = LoggerKind("wandb", _start_wandb, None, "wandb", _check_wandb)
MLFLOW = LoggerKind("mlflow", _start_mlflow, None, "mlflow", _check_mlflow)
JSONL = LoggerKind("jsonl", _start_jsonl, "FILE", None, _check_file)


def check_logger_kind(value: Any, name: str, where: str) -> LoggerKind:
    """``value`` if it is the ``LoggerKind`` called ``name``; else a ``PluginError``."""
    return check_named(value, name, where, LoggerKind, "pytest_vlcheck.loggers.LoggerKind")


LOGGERS: Registry[LoggerKind] = Registry(
    "logger",
    {
        "tensorboard": "pytest_vlcheck.loggers.specs:TENSORBOARD",
        "wandb": "pytest_vlcheck.loggers.specs:WANDB",
        "mlflow": "pytest_vlcheck.loggers.specs:MLFLOW",
        "jsonl": "pytest_vlcheck.loggers.specs:JSONL",
    },
    ENTRY_POINT_GROUP,
    check_logger_kind,
)
