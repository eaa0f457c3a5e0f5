"""One shape for every table of things a user picks by name: model schemes, task kinds,
``vlcheck import`` formats, logger kinds and prior schemes.

A ``Registry`` is a read-only mapping from a name to a thing. Its built-in entries are
``"module:attribute"`` references, imported on first use (a run that never names ``hf:``
never imports transformers). A registry with an entry-point ``group`` also holds what
installed packages register there (``[project.entry-points."pytest_vlcheck.tasks"]`` in their
``pyproject.toml``), found through ``importlib.metadata``: no list to edit, no import of
the package until its name is used. A built-in name wins over a package's.

Each registry checks what it loads (``check``): a plug-in that is not what its kind needs
is one message naming the entry point and what is missing, never a traceback later. The
entry points are looked up again when ``sys.path`` changes (a package added to it at run
time, as the tests do with a hand-written ``*.dist-info``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from pytest_vlcheck.errors import UserCodeError, VlcheckUserError, user_frame

T = TypeVar("T")

__all__ = ["PluginError", "PluginLoadError", "Registry", "check_named"]


class PluginError(VlcheckUserError, TypeError):
    """A registered plug-in is not what its kind needs (``str()`` says what is missing)."""


class PluginLoadError(UserCodeError, PluginError):
    """A plug-in's module raised on import: one line naming the entry point, the exception and
    the plug-in's own line where it was raised (its traceback is the third party's concern, and
    a broken environment behind it, e.g. torch and torchvision from different builds, would
    otherwise print pages of it)."""

    def render(self) -> str:
        return str(self)

    @classmethod
    def loading(cls, exc: BaseException, where: str) -> PluginLoadError:
        """``exc``, raised while importing the plug-in ``where`` describes."""
        frame = user_frame(exc)
        at = f" (at {frame})" if frame else ""
        detail = " ".join(str(exc).split())
        message = f"loading {where} raised {type(exc).__name__}" + (f": {detail}" if detail else "")
        error = cls(message + at, "")
        error.__cause__ = exc
        return error


def _resolve(reference: str) -> Any:
    """``"package.module:attribute"`` (or a bare module) imported."""
    module, _, attribute = reference.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


def check_named(value: Any, name: str, where: str, kind: type[T], spelled: str) -> T:
    """``value`` if it is a ``kind`` (``spelled``: its public dotted name) calling itself
    ``name``; else a ``PluginError`` (the ``check`` of registries serving instances)."""
    if not isinstance(value, kind):
        raise PluginError(f"{where} is {type(value).__name__}; expected a {spelled}")
    check_name(value, name, where)
    return value


def check_name(value: Any, name: str, where: str) -> None:
    """A ``PluginError`` unless ``value.name`` is the ``name`` it was registered under."""
    if value.name != name:
        raise PluginError(f"{where} calls itself '{value.name}'; expected its name '{name}'")


def _accept(value: Any, name: str, where: str) -> Any:
    return value


class Registry(Mapping[str, T], Generic[T]):
    """Named ``kind``s: ``builtins`` (name -> ``"module:attribute"``) in their order, then
    those registered in the entry-point ``group`` (None: built-ins only), sorted.

    ``check(value, name, where)`` returns the loaded value as the registry serves it (or an
    adapter of it) and raises ``PluginError`` for one that cannot serve; ``where`` names its
    source for messages.
    """

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, str],
        group: str | None = None,
        check: Callable[[Any, str, str], T] = _accept,
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins)
        self._check = check
        self._loaded: dict[str, T] = {}
        self._found: tuple[tuple[str, ...], dict[str, EntryPoint]] | None = None

    def plugins(self) -> dict[str, EntryPoint]:
        """The entry points of ``group`` by name, built-in names left out."""
        if self.group is None:
            return {}
        key = tuple(sys.path)
        if self._found is None or self._found[0] != key:
            found = {
                ep.name: ep
                for ep in entry_points(group=self.group)
                if ep.name not in self._builtins
            }
            self._found = (key, dict(sorted(found.items())))
            self._loaded = {k: v for k, v in self._loaded.items() if k in self._builtins}
        return self._found[1]

    @property
    def builtin_names(self) -> tuple[str, ...]:
        """vlcheck's own names, in order; looks up no entry point."""
        return tuple(self._builtins)

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` is vlcheck's own (a plug-in runs a third party's code)."""
        return name in self._builtins

    def where(self, name: str) -> str:
        """Where ``name`` comes from, for messages: its entry point, or vlcheck itself."""
        if name in self._builtins:
            return f"the built-in {self.kind} '{name}'"
        entry = self.plugins()[name]
        return f"the {self.kind} '{name}' (entry point '{entry.value}' in '{self.group}')"

    def __getitem__(self, name: str) -> T:
        plugins = self.plugins()  # first: a changed sys.path forgets the plug-ins loaded
        if name in self._loaded:
            return self._loaded[name]
        if name in self._builtins:
            value = self._check(_resolve(self._builtins[name]), name, self.where(name))
        else:
            entry = plugins.get(name)
            if entry is None:
                raise KeyError(name)
            where = self.where(name)
            try:
                raw = entry.load()
            except Exception as exc:  # third-party code: one line, the plug-in's own frame
                raise PluginLoadError.loading(exc, where) from exc
            value = self._check(raw, name, where)
        self._loaded[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtins or name in self.plugins())

    def __iter__(self) -> Iterator[str]:
        yield from self._builtins
        yield from self.plugins()

    def __len__(self) -> int:
        return len(self._builtins) + len(self.plugins())

    def __repr__(self) -> str:
        return f"<{self.kind} registry: {', '.join(self)}>"
