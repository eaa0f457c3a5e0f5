"""Model specs (``--vl-model``): parse them, name them, and load the scorer behind them.

A spec is ``[NAME=]SPEC`` where SPEC is an alias (``clip``, ``tiny``, ``tiny-vlm``),
``SCHEME:BODY`` for a built-in scheme (open_clip, hf, vqa, scores, py), or ``ENTRY[:BODY]`` for
a model a third-party package registers in the ``pytest_vlcheck.models`` entry-point group (a
callable taking ``(body, options)`` and returning a scorer, or a backend: an object with such a
``load``).
``MODELS`` holds both (``pytest_vlcheck.registry``); backends are imported only when loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from pytest_vlcheck.errors import ModelLoadError, ModelSpecError, UserCodeError, VlcheckUserError
from pytest_vlcheck.models.backends.broken_environment import import_failure
from pytest_vlcheck.models.backends.served.endpoint import default_name, is_served, parse_endpoint
from pytest_vlcheck.models.checkpoints import expand_checkpoints, is_glob
from pytest_vlcheck.models.devices import computed_precision
from pytest_vlcheck.models.protocol import (
    Digest,
    ModelIdentity,
    ModelOptions,
    ModelSpec,
    check_scorer,
)
from pytest_vlcheck.models.spec_files import FileCheck, check_spec_files
from pytest_vlcheck.parsing.errors import closest, did_you_mean
from pytest_vlcheck.registry import PluginError, PluginLoadError, Registry

__all__ = ["ModelLoadError", "ModelSpec", "ModelSpecError", "load_scorer", "parse_spec"]

ENTRY_POINT_GROUP = "pytest_vlcheck.models"
BACKENDS = {
    "open_clip": "pytest_vlcheck.models.backends.open_clip",
    "hf": "pytest_vlcheck.models.backends.hf",
    "vqa": "pytest_vlcheck.models.backends.vqa",
    "scores": "pytest_vlcheck.models.backends.scores",
    "py": "pytest_vlcheck.models.backends.custom",
}
BUILTIN_BACKENDS = frozenset({"open_clip", "hf", "vqa", "scores"})
"""Schemes whose code is vlcheck's own (``py:`` and entry points run the user's code)."""
TORCH_BACKENDS = frozenset({"open_clip", "hf", "vqa"})
CLIP_SPEC = "open_clip:ViT-B-32-quickgelu@openai"
_NAME = re.compile(r"[A-Za-z0-9_.@+-]+")


class Backend(Protocol):
    """What a scheme names: ``load(body, options)`` builds the scorer. Any backend may add
    ``check_files(body) -> str | None``: the local files the body names, checked when the
    spec is parsed, before anything heavy is imported (``spec_files``: what is missing and
    what is expected, None when nothing is). A built-in backend module may add
    ``identify(body, options, digest)`` (the identity without loading)."""

    def load(self, body: str, options: ModelOptions) -> Any: ...


@dataclass(frozen=True)
class _Factory:
    """A plug-in registered as a bare callable ``(body, options) -> scorer``."""

    load: Callable[[str, ModelOptions], Any]


def check_backend(value: Any, name: str, where: str) -> Backend:
    """A backend from ``value``: an object with ``load``, or a factory callable."""
    if callable(getattr(value, "load", None)):
        return cast(Backend, value)  # a plug-in (Any) whose load is checked above
    if callable(value):
        return _Factory(value)
    raise PluginError(
        f"{where} is {type(value).__name__}; expected a callable (body, options) -> scorer, "
        "or an object with such a load"
    )


MODELS: Registry[Backend] = Registry("model scheme", BACKENDS, ENTRY_POINT_GROUP, check_backend)


def aliases() -> dict[str, str]:
    """Short names for well-known models (``tiny`` and ``tiny-vlm`` are the models shipped in
    this package)."""
    from pytest_vlcheck.tiny import TINY_SPEC, TINY_VLM_SPEC

    return {"clip": CLIP_SPEC, "tiny": TINY_SPEC, "tiny-vlm": TINY_VLM_SPEC}


def parse_specs(texts: list[str]) -> list[ModelSpec]:
    """Parse every ``--vl-model`` value, a checkpoint glob into one spec per file
    (``models.checkpoints``); names must come out unique, and every local file a spec names
    must exist (its backend's ``check_files``, before torch is imported)."""
    specs = [member for text in texts for member in expand_checkpoints(parse_spec(text))]
    seen: set[str] = set()
    for spec in specs:
        check_spec_files(spec.text, _file_check(spec), spec.body)
        if spec.name in seen:
            raise ModelSpecError(
                f"two --vl-model values are both named '{spec.name}'; name "
                f"them apart with NAME=SPEC"
            )
        seen.add(spec.name)
    return specs


def _file_check(spec: ModelSpec) -> FileCheck | None:
    """The backend's ``check_files``, if it has one; a plug-in's own exception in it is the
    third party's error, as in its ``load``. A plug-in whose module raises on import has no
    check here: loading the model says so, one line per model, as for any load failure."""
    try:
        backend = MODELS[spec.scheme]
    except PluginLoadError:
        return None
    check = getattr(backend, "check_files", None)
    if check is None or MODELS.is_builtin(spec.scheme):
        return check
    what = f"model '{spec.text}': checking its files with {MODELS.where(spec.scheme)}"

    def plugin_check(body: str) -> str | None:
        try:
            problem = check(body)
        except VlcheckUserError:
            raise
        except Exception as exc:  # third-party code: its own error, its own frames
            raise UserCodeError.from_exception(exc, what) from exc
        return None if problem is None else str(problem)

    return plugin_check


def parse_spec(text: str) -> ModelSpec:
    """Parse one ``[NAME=]SPEC``."""
    given_name = None
    head, sep, rest = text.partition("=")
    if sep and _NAME.fullmatch(head) and ":" not in head:
        given_name, text = head, rest
    text = text.strip()
    if not text:
        raise ModelSpecError(
            "an empty --vl-model value; expected e.g. clip, tiny, "
            "open_clip:ARCH@WEIGHTS, hf:DIR, vqa:DIR, scores:FILE or py:MODULE:FACTORY"
        )
    alias_table = aliases()
    expanded = alias_table.get(text, text)
    scheme, _, body = expanded.partition(":")
    if scheme not in MODELS:
        known = ", ".join([*sorted(alias_table), *(f"{s}:..." for s in BACKENDS)])
        raise ModelSpecError(
            f"unknown model '{text}'{_misspelt(text, alias_table)}; expected one of {known}, "
            f"or a model registered in the '{ENTRY_POINT_GROUP}' entry-point group"
        )
    if scheme in BACKENDS and not body:
        raise ModelSpecError(f"'{text}' names no model after '{scheme}:'")
    if scheme == "vqa" and is_served(body):
        parse_endpoint(body)  # a malformed served URL is a usage error now
    name = given_name or (text if text in alias_table else _default_name(scheme, body))
    return ModelSpec(name=name, text=text, scheme=scheme, body=body)


def _misspelt(text: str, alias_table: dict[str, str]) -> str:
    """`` (did you mean 'tiny'?)`` for ``tinyy``, ``'open_clip:...'`` for ``openclip:...``."""
    scheme, colon, body = text.partition(":")
    if colon:
        close = closest(scheme, list(MODELS))
        return f" (did you mean '{close}:{body}'?)" if close else ""
    return did_you_mean(text, [*alias_table, *MODELS])


def _default_name(scheme: str, body: str) -> str:
    """A short readable name: file stems and last path parts, not whole paths."""
    if scheme == "open_clip":
        arch, _, pretrained = body.partition("@")
        parts = [
            _stem(arch),
            *([_stem(pretrained)] if pretrained and not is_glob(pretrained) else []),
        ]
        name = "@".join(parts)
    elif scheme == "vqa" and is_served(body):
        name = default_name(body)
    elif scheme in ("hf", "vqa"):
        parts = body.rstrip("/").split("/")
        name = parts[-2] if is_glob(parts[-1]) and len(parts) > 1 else parts[-1]
    elif scheme == "scores":
        name = _stem(body)
    elif scheme == "py":
        name = body.rsplit(":", 1)[-1]
    else:
        name = f"{scheme}-{body}" if body else scheme
    return "".join(c if _NAME.fullmatch(c) else "-" for c in name) or scheme


def _stem(text: str) -> str:
    return (
        Path(text).stem
        if text.endswith((".json", ".safetensors", ".pt", ".bin", ".jsonl", ".pth"))
        else Path(text).name
    )


def load_scorer(spec: ModelSpec, options: ModelOptions) -> Any:
    """Import the backend and build the scorer.

    Deliberate failures arrive as ``VlcheckUserError`` and pass through; a missing optional
    package becomes ``ModelLoadError``; an entry point's own exception is the third party's
    code, so it becomes ``UserCodeError``. Anything else from a built-in backend is a bug in
    vlcheck and keeps its traceback.
    """
    try:
        backend = MODELS[spec.scheme]
        if MODELS.is_builtin(spec.scheme):
            scorer = backend.load(spec.body, options)
        else:
            scorer = _plugin_scorer(backend, spec, options)
    except ModelLoadError as exc:
        raise _naming_spec(exc, spec) from exc.__cause__
    except UserCodeError as exc:
        raise _naming_spec(exc, spec) from exc.__cause__
    except VlcheckUserError:
        raise
    except Exception as exc:
        failure = _environment_failure(exc, spec)
        if failure is None:  # a bug in vlcheck: its traceback
            raise
        raise failure from None
    check_scorer(scorer, spec.text)
    return scorer


def run_precision(scheme: str, options: ModelOptions) -> str:
    """The precision a model of ``scheme`` computes in: a torch backend's (fp16 on the CPU
    runs in fp32), else as asked (user code reads ``options.precision`` itself)."""
    if scheme in TORCH_BACKENDS:
        return computed_precision(options.precision, options.device)
    return options.precision


def identify(spec: ModelSpec, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The model's identity without building it (no torch), or None when the backend cannot
    tell it without loading (hub tags it has not seen, entry points, ``scores:``).

    Backends answer through their own ``identify(body, options, digest)``. Any failure is
    None: loading the model then reports the problem in its own words.
    """
    if not MODELS.is_builtin(spec.scheme):
        return None
    try:
        backend_identify = getattr(MODELS[spec.scheme], "identify", None)
        return None if backend_identify is None else backend_identify(spec.body, options, digest)
    except Exception:  # the load that follows explains it
        return None


def _environment_failure(exc: Exception, spec: ModelSpec) -> ModelLoadError | None:
    """A backend's package that is missing or cannot be imported, as one line naming the
    model, the package and the fix; None for anything else."""
    if isinstance(exc, ModuleNotFoundError) and exc.name in _OPTIONAL_PACKAGES:
        return ModelLoadError(
            f"model '{spec.text}' needs the Python package '{exc.name}', which is not "
            f"installed; expected: pip install {_OPTIONAL_PACKAGES[exc.name]}"
        )
    broken = import_failure(exc)
    return ModelLoadError(f"model '{spec.text}' cannot be used: {broken}") if broken else None


def _naming_spec(exc: VlcheckUserError, spec: ModelSpec) -> VlcheckUserError:
    """The same error, its message now opening ``cannot load model 'SPEC': `` (the backend's
    own ``SCHEME:BODY: `` prefix dropped; a short alias shows what it stands for)."""
    message = str(exc)
    expanded = f"{spec.scheme}:{spec.body}"
    message = message.removeprefix(f"{expanded}: ")
    shown = f"'{spec.text}'"
    if spec.text != expanded and "/" not in expanded:  # say what a short alias stands for
        shown += f" ({expanded})"
    exc.args = (f"cannot load model {shown}: {message}",)
    return exc


MODELS_EXTRA = '"pytest-vlcheck[models]"'
"""The install extra with the model packages (a torch-free install runs everything else)."""
_OPTIONAL_PACKAGES = {
    "torch": MODELS_EXTRA,
    "torchvision": MODELS_EXTRA,
    "open_clip": MODELS_EXTRA,
    "transformers": MODELS_EXTRA,
    "sentencepiece": MODELS_EXTRA,
    "huggingface_hub": MODELS_EXTRA,
    "safetensors": "safetensors",
}


def _plugin_scorer(backend: Backend, spec: ModelSpec, options: ModelOptions) -> Any:
    what = f"model '{spec.text}': {MODELS.where(spec.scheme)}"
    try:
        return backend.load(spec.body, options)
    except VlcheckUserError:
        raise
    except Exception as exc:  # third-party code: its own error, its own frames
        raise UserCodeError.from_exception(exc, what) from exc
