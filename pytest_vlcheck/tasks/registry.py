"""The task kinds by name, chosen once per test (as pytest-xdist picks one scheduler).

The built-in kinds, then those installed packages register in the ``pytest_vlcheck.tasks``
entry-point group (an instance of a ``Task``; see docs/extending.md). A kind is checked when
first used: it must have every member of the ``Task`` protocol and the name it is registered
under.
"""

from __future__ import annotations

from typing import Any, cast

from pytest_vlcheck.registry import PluginError, Registry, check_name
from pytest_vlcheck.tasks.protocol import Task

ENTRY_POINT_GROUP = "pytest_vlcheck.tasks"
TASK_MEMBERS: tuple[str, ...] = tuple(m for m in vars(Task) if not m.startswith("_"))
"""What a task kind provides (``BaseTask`` gives defaults for the optional ones)."""


def check_task(value: Any, name: str, where: str) -> Task:
    """``value`` if it is a task kind called ``name``; else a ``PluginError`` saying why."""
    if isinstance(value, type):
        raise PluginError(f"{where} is the class {value.__name__}; expected an instance of it")
    missing = [member for member in TASK_MEMBERS if not hasattr(value, member)]
    if missing:
        raise PluginError(
            f"{where} lacks {', '.join(missing)}; a task kind provides every member of "
            "pytest_vlcheck.tasks.Task (subclass pytest_vlcheck.tasks.base.BaseTask for defaults)"
        )
    check_name(value, name, where)
    return cast(Task, value)  # a plug-in (Any) holding every member of Task, checked above


TASKS: Registry[Task] = Registry(
    "task kind",
    {
        "caption": "pytest_vlcheck.tasks.caption.kind:CAPTION",
        "image": "pytest_vlcheck.tasks.image:IMAGE",
        "group": "pytest_vlcheck.tasks.group:GROUP",
        "match": "pytest_vlcheck.tasks.match:MATCH",
        "invariance": "pytest_vlcheck.tasks.invariance:INVARIANCE",
        "directional": "pytest_vlcheck.tasks.directional:DIRECTIONAL",
        "text": "pytest_vlcheck.tasks.text:TEXT",
        "choice": "pytest_vlcheck.tasks.choice:CHOICE",
        "answer": "pytest_vlcheck.tasks.answer:ANSWER",
    },
    ENTRY_POINT_GROUP,
    check_task,
)
TASK_NAMES: tuple[str, ...] = TASKS.builtin_names
"""The built-in kinds (``TASKS`` also holds the installed packages' kinds)."""


def get_task(name: str) -> Task:
    """The task kind called ``name`` (names come from validated checklists or reports)."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task kind {name!r}; known: {', '.join(TASKS)}") from None


def builtin_tasks() -> list[Task]:
    """The built-in kinds, imported; no installed package's kind is (a broken plug-in must
    not break a run that never names it)."""
    return [TASKS[name] for name in TASK_NAMES]
