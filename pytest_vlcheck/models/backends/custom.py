"""``py:MODULE:FACTORY``: a scorer made by the user's own code.

MODULE is imported from the current directory or ``sys.path``. How FACTORY is called:

- ``FACTORY()`` is the norm;
- ``FACTORY(options)`` (the ``ModelOptions``: device, batch size, precision) only when its
  first parameter is positional, e.g. ``def make(options)`` or ``def make(opts=None)``;
- ``FACTORY(options=options)`` when it has a keyword-only parameter named ``options``.

``def make(**kwargs)`` and ``def make(*args)`` are called with nothing.

A factory may declare its scorer's fingerprint without being built, as the attribute
``FACTORY.vlcheck_fingerprint``: a string, or a function of no arguments returning one (e.g.
hashing a checkpoint), equal to the scorer's own ``fingerprint``. With it, a re-run whose
embeddings are all in the embedding cache never calls FACTORY. An exception raised
while importing MODULE or inside FACTORY is the user's: it becomes ``UserCodeError`` with a
traceback trimmed to their frames.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from pytest_vlcheck.errors import ModelLoadError, UserCodeError
from pytest_vlcheck.models.protocol import Digest, ModelIdentity, ModelOptions


def load(body: str, options: ModelOptions) -> Any:
    """Import MODULE, call FACTORY and return its scorer."""
    spec = f"py:{body}"
    module_name, sep, factory_name = body.rpartition(":")
    if not sep or not module_name or not factory_name:
        raise ModelLoadError(f"{spec}: expected py:MODULE:FACTORY, e.g. py:my_scorers:make_scorer")
    module = _import(module_name, spec)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        found = "is not callable" if hasattr(module, factory_name) else "does not exist"
        raise ModelLoadError(
            f"{spec}: '{factory_name}' in module '{module_name}' ({_where(module)}) {found}; "
            "expected a function or class returning a scorer"
        )
    args, kwargs = factory_arguments(factory, options, spec)
    try:
        return factory(*args, **kwargs)
    except Exception as exc:  # the user's code: its own error, its own frames
        raise UserCodeError.from_exception(exc, f"{spec}: the factory {factory_name}()") from exc


FINGERPRINT_ATTRIBUTE = "vlcheck_fingerprint"


def identify(body: str, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The fingerprint FACTORY declares (see the module docstring), or None."""
    module_name, sep, factory_name = body.rpartition(":")
    if not sep or not module_name:
        return None
    factory = getattr(_import(module_name, f"py:{body}"), factory_name, None)
    declared = getattr(factory, FINGERPRINT_ATTRIBUTE, None)
    if callable(declared):
        declared = declared()
    if not isinstance(declared, str) or not declared:
        return None
    return ModelIdentity(declared, "py")


def factory_arguments(
    factory: Callable[..., Any], options: ModelOptions, spec: str
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What FACTORY is called with, by the rule in the module docstring."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return (), {}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if parameters and parameters[0].kind in positional:
        args: tuple[Any, ...] = (options,)
        kwargs: dict[str, Any] = {}
    elif any(p.name == "options" and p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters):
        args, kwargs = (), {"options": options}
    else:
        args, kwargs = (), {}
    taken = {parameters[0].name} if args else set(kwargs)
    extra = [name for name in required if name not in taken]
    if extra:
        raise ModelLoadError(
            f"{spec}: the factory needs the argument(s) {', '.join(extra)}; expected a factory "
            "taking no argument, or one (the ModelOptions: device, batch_size, precision)"
        )
    return args, kwargs


def _import(module_name: str, spec: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and _is_prefix(exc.name, module_name):
            raise ModelLoadError(
                f"{spec}: no module named '{exc.name}' in the current directory ({cwd}) or "
                "on sys.path; expected MODULE to be an importable module, e.g. my_scorers "
                "for ./my_scorers.py"
            ) from None
        raise UserCodeError.from_exception(exc, f"{spec}: importing '{module_name}'") from exc
    except Exception as exc:  # SyntaxError, or an error at the module's top level
        raise UserCodeError.from_exception(exc, f"{spec}: importing '{module_name}'") from exc


def _is_prefix(name: str, module_name: str) -> bool:
    """Whether ``name`` is ``module_name`` or one of its parent packages."""
    return module_name == name or module_name.startswith(name + ".")


def _where(module: Any) -> str:
    return str(getattr(module, "__file__", None) or module.__name__)
