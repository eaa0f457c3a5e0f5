"""Split a selection of tests across N CI jobs (``--vl-shard K/N``), pure and deterministic.

Every job of a matrix collects the same selection and must agree on who runs what without
talking to the others, so the split depends only on the groups and their weights, never on
collection order or the machine. A group is one checklist test with all its test x model
items (a test's models share its images, so they stay together); its weight is the number of
examples it scores. Groups are dealt largest first to the lightest shard (LPT), which keeps
the heaviest shard within the largest group of the ideal share.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pytest_vlcheck.errors import VlcheckUserError

__all__ = ["Shard", "ShardSpecError", "assign_shards", "parse_shard", "shard_of"]

K = TypeVar("K", bound=Hashable)


class ShardSpecError(VlcheckUserError):
    """``--vl-shard`` is not ``K/N`` with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    """Job ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> ``Shard(2, 4)``; anything else raises ``ShardSpecError``."""
    index_text, slash, count_text = text.strip().partition("/")
    expected = "expected K/N with whole numbers 1 <= K <= N, e.g. 2/4"
    if not slash or not index_text.strip().isdigit() or not count_text.strip().isdigit():
        raise ShardSpecError(f"--vl-shard is '{text}'; {expected}")
    shard = Shard(int(index_text), int(count_text))
    if not 1 <= shard.index <= shard.count:
        raise ShardSpecError(f"--vl-shard is '{text}'; {expected}")
    return shard


def assign_shards(weights: Mapping[K, int], count: int) -> dict[K, int]:
    """Group -> 1-based shard, balancing the summed weights (each at least 1).

    Ties are broken by the group's ``repr`` (heavier first) and by the lower shard index, so
    every job computes the same assignment from the same selection.
    """
    if count < 1:
        raise ValueError(f"shard count must be at least 1, got {count}")
    order = sorted(weights, key=lambda group: (-max(weights[group], 1), repr(group)))
    loads = [(0, index) for index in range(1, count + 1)]
    assignment: dict[K, int] = {}
    for group in order:
        load, index = heapq.heappop(loads)
        assignment[group] = index
        heapq.heappush(loads, (load + max(weights[group], 1), index))
    return assignment


def shard_of(items: Sequence[tuple[K, int]], shard: Shard) -> list[bool]:
    """For each (group, weight) of a selection, in order: does job ``shard`` run it? A
    group's weight is the sum over its items."""
    weights: dict[K, int] = {}
    for group, weight in items:
        weights[group] = weights.get(group, 0) + weight
    assignment = assign_shards(weights, shard.count)
    return [assignment[group] == shard.index for group, _weight in items]
