"""Aggregates over a tag: macro averages, and groups right only when all their members are.

ARO's VG-Relation and VG-Attribution tables are means of per-relation / per-attribute
accuracies over the groups with enough examples, not the share of all examples right (the
micro pass rate). ``macro_average`` computes that mean from per-example outcomes so both
figures can be reported side by side. What'sUp's pair and set accuracies count a group of
examples (sharing a tag value) right only when every member is right: ``all_of_rate``, and
per slice (MMVP's pair accuracy per pattern) ``all_of_slices``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MacroAverage:
    """The mean of per-value pass rates and what went into it.

    ``value`` is ``None`` when no value qualifies; ``per_value`` maps each value used to
    ``(n, passed)``; ``left_out`` maps each value not used to why (``"excluded"`` or
    ``"n=3 < 25"``). Examples without the tag are in neither.
    """

    value: float | None
    per_value: dict[str, tuple[int, int]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)


def macro_average(
    correct: np.ndarray,
    values: Sequence[str | None],
    *,
    min_count: int = 1,
    exclude: Collection[str] = (),
) -> MacroAverage:
    """Mean over tag values of each value's pass rate, every qualifying value weighing the same.

    ``values[i]`` is example i's tag value (``None``: the example has no such tag and is not
    counted). A value with fewer than ``min_count`` examples, or named in ``exclude``, is left
    out with its reason.
    """
    outcomes = np.asarray(correct, dtype=bool)
    if len(values) != len(outcomes):
        raise ValueError(f"{len(values)} tag values for {len(outcomes)} outcomes")
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    counts: dict[str, list[int]] = {}
    for ok, value in zip(outcomes, values, strict=True):
        if value is None:
            continue
        cell = counts.setdefault(value, [0, 0])
        cell[0] += 1
        cell[1] += int(ok)
    used: dict[str, tuple[int, int]] = {}
    left_out: dict[str, str] = {}
    for value, (n, passed) in sorted(counts.items()):
        if value in exclude:
            left_out[value] = "excluded"
        elif n < min_count:
            left_out[value] = f"n={n} < {min_count}"
        else:
            used[value] = (n, passed)
    mean = float(np.mean([passed / n for n, passed in used.values()])) if used else None
    return MacroAverage(mean, used, left_out)


@dataclass(frozen=True)
class AllOfRate:
    """The share of groups whose every member is right; ``value`` is None with no group.

    ``groups`` is how many groups were counted, ``left_out`` how many were not because a
    member could not be scored.
    """

    value: float | None
    groups: int
    left_out: int


def all_of_rate(
    correct: np.ndarray, values: Sequence[str | None], unscored: Collection[str] = ()
) -> AllOfRate:
    """Groups of scored examples sharing a tag value, each right only when all of them are.

    ``values[i]`` is scored example i's tag value (``None``: not in any group). A group with
    a value in ``unscored`` (a member whose images could not be scored) is left out: its
    outcome is unknown, and counting it wrong would mix image availability into the model's
    number.
    """
    outcomes = np.asarray(correct, dtype=bool)
    if len(values) != len(outcomes):
        raise ValueError(f"{len(values)} tag values for {len(outcomes)} outcomes")
    right: dict[str, bool] = {}
    for ok, value in zip(outcomes, values, strict=True):
        if value is not None:
            right[value] = right.get(value, True) and bool(ok)
    counted = [ok for value, ok in right.items() if value not in unscored]
    rate = sum(counted) / len(counted) if counted else None
    return AllOfRate(rate, len(counted), len(right) - len(counted))


MIXED = "mixed"
"""The slice value of an ``all_of`` group whose members carry different values of the tag."""


def all_of_slices(
    correct: np.ndarray,
    groups: Sequence[str | None],
    tags: Sequence[Mapping[str, str]],
    unscored: Collection[str] = (),
    skip: Collection[str] = (),
) -> dict[str, dict[str, dict[str, Any]]]:
    """``all_of_rate`` per slice: ``{tag: {value: {groups, passed, rate}}}``.

    A group falls under a tag's value when every member carries that value (MMVP's pair
    under its pattern), under ``MIXED`` when its members differ (or only some carry the
    tag); a tag none of a group's members carries leaves the group out of that tag. Tags in
    ``skip`` (the ``all_of`` tags themselves) and groups in ``unscored`` are not counted.
    """
    outcomes = np.asarray(correct, dtype=bool)
    if not len(groups) == len(tags) == len(outcomes):
        raise ValueError(f"{len(groups)} groups and {len(tags)} tag sets for {len(outcomes)}")
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        if group is not None and group not in unscored:
            members.setdefault(group, []).append(index)
    counts: dict[str, dict[str, list[int]]] = {}
    for indices in members.values():
        right = bool(outcomes[indices].all())
        names = {name for i in indices for name in tags[i]} - set(skip)
        for name in names:
            values = {tags[i].get(name) for i in indices}
            value = next(iter(values)) if len(values) == 1 else MIXED
            cell = counts.setdefault(name, {}).setdefault(value or MIXED, [0, 0])
            cell[0] += 1
            cell[1] += int(right)
    return {
        name: {
            value: {"groups": n, "passed": passed, "rate": passed / n}
            for value, (n, passed) in sorted(values.items())
        }
        for name, values in sorted(counts.items())
    }
