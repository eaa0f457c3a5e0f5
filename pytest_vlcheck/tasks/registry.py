"""The task kinds by name, chosen once per test (as pytest-xdist picks one scheduler)."""

from __future__ import annotations

from pytest_vlcheck.tasks.caption import CAPTION
from pytest_vlcheck.tasks.directional import DIRECTIONAL
from pytest_vlcheck.tasks.group import GROUP
from pytest_vlcheck.tasks.image import IMAGE
from pytest_vlcheck.tasks.invariance import INVARIANCE
from pytest_vlcheck.tasks.match import MATCH
from pytest_vlcheck.tasks.protocol import Task
from pytest_vlcheck.tasks.text import TEXT

TASKS: dict[str, Task] = {
    task.name: task for task in (CAPTION, IMAGE, GROUP, MATCH, INVARIANCE, DIRECTIONAL, TEXT)
}
TASK_NAMES: tuple[str, ...] = tuple(TASKS)


def get_task(name: str) -> Task:
    """The task kind called ``name`` (names come from validated checklists or reports)."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task kind {name!r}; known: {', '.join(TASK_NAMES)}") from None
