"""Split a selection of tests across N CI jobs (``--vl-shard K/N``), pure and deterministic.

Every job of a matrix collects the same selection and must agree on who runs what without
talking to the others, so the split depends only on the groups and their weights, never on
collection order or the machine. A group is one checklist test with all its test x model
items (a test's models share its images, so they stay together); its weight is the number of
examples it scores. Groups are dealt largest first to the lightest shard (LPT), which keeps
the heaviest shard within the largest group of the ideal share.

The job count costs nothing: only as many shards as there are groups can receive one, so the
split allocates per group, never per job, and ``--vl-shard 1/1000000`` is as quick as
``1/4`` (the jobs past the group count are empty). ``MAX_SHARDS`` only bounds the digits.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pytest_vlcheck import bounds
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.results.run_meta import ShardPlan
from pytest_vlcheck.run.array_jobs import ArrayJobError, array_job

__all__ = [
    "Shard",
    "ShardSpecError",
    "assign_shards",
    "parse_shard",
    "plan_shard",
    "shard_option",
]

K = TypeVar("K", bound=Hashable)

MAX_SHARDS = 1_000_000
"""More jobs than any CI matrix runs (GitHub Actions allows 256); a larger N is a typo."""


class ShardSpecError(VlcheckUserError):
    """``--vl-shard`` is not ``K/N`` with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    """Job ``index`` (1-based) of ``count``; ``source`` says which scheduler's array gave
    them (``--vl-shard=auto``), empty when given as K/N."""

    index: int
    count: int
    source: str = ""

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def header(self) -> str | None:
        """The line a run starts with when a job array chose the shard, else None."""
        return f"vlcheck: --vl-shard=auto is job {self} ({self.source})" if self.source else None


def shard_option(text: str | None) -> Shard | None:
    """``--vl-shard`` as given (None: not given), parsed by ``parse_shard``."""
    return None if text is None else parse_shard(text)


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> Shard:
    """``"2/4"`` -> ``Shard(2, 4)``; ``"auto"`` -> this job of the scheduler's array in
    ``environ`` (default ``os.environ``; ``run.array_jobs``); anything else raises
    ``ShardSpecError``."""
    if text.strip() == "auto":
        try:
            index, count, source = array_job(os.environ if environ is None else environ)
        except ArrayJobError as exc:
            raise ShardSpecError(str(exc)) from None
        return Shard(index, count, source)
    index_text, _, count_text = text.strip().partition("/")
    expected = f"expected K/N with whole numbers 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/4"
    try:
        count = bounds.whole_number(count_text, 1, MAX_SHARDS)
        index = bounds.whole_number(index_text, 1, count)
    except bounds.BoundError:
        raise ShardSpecError(f"--vl-shard is {bounds.shown(text)}; {expected}") from None
    return Shard(index, count)


def assign_shards(weights: Mapping[K, int], count: int) -> dict[K, int]:
    """Group -> 1-based shard, balancing the summed weights (each at least 1).

    Ties are broken by the group's ``repr`` (heavier first) and by the lower shard index, so
    every job computes the same assignment from the same selection.
    """
    if count < 1:
        raise ValueError(f"shard count must be at least 1, got {count}")
    order = sorted(weights, key=lambda group: (-max(weights[group], 1), repr(group)))
    # LPT fills an empty shard before any other: shards past the group count stay empty
    loads = [(0, index) for index in range(1, min(count, len(order)) + 1)]
    assignment: dict[K, int] = {}
    for group in order:
        load, index = heapq.heappop(loads)
        assignment[group] = index
        heapq.heappush(loads, (load + max(weights[group], 1), index))
    return assignment


Group = tuple[str, str]
"""A shard group: (checklist file relative to the rootdir, test id)."""


def plan_shard(items: Sequence[tuple[Group, int]], shard: Shard) -> tuple[list[bool], ShardPlan]:
    """For each (group, weight) of a selection, in order: does job ``shard`` run it? A
    group's weight is the sum over its items. Also the plan the job ran under."""
    weights: dict[Group, int] = {}
    for group, weight in items:
        weights[group] = weights.get(group, 0) + weight
    assignment = assign_shards(weights, shard.count)
    listing = json.dumps(sorted(weights.items())).encode()
    selection = hashlib.sha256(listing).hexdigest()[:16]
    plan = ShardPlan(shard.index, shard.count, selection, min(shard.count, len(weights)))
    return [assignment[group] == shard.index for group, _weight in items], plan
