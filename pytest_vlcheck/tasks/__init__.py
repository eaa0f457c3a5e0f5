"""Task kinds: one module per kind behind the ``Task`` protocol, found through the registry.

Adding a kind is one module (its example dataclass and a ``Task`` implementation) plus one
line in ``registry.py``, or, outside this package, an entry point in the
``pytest_vlcheck.tasks`` group (docs/extending.md); nothing else in the package names a kind.
"""

from pytest_vlcheck.tasks.protocol import (
    CandidateSet,
    Example,
    GenerationRules,
    Grid,
    Judgement,
    ScoreScale,
    Task,
)
from pytest_vlcheck.tasks.registry import TASK_NAMES, TASKS, builtin_tasks, get_task

__all__ = [
    "TASKS",
    "TASK_NAMES",
    "CandidateSet",
    "Example",
    "GenerationRules",
    "Grid",
    "Judgement",
    "ScoreScale",
    "Task",
    "builtin_tasks",
    "get_task",
]
