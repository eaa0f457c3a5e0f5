"""``RankShare``: one rank's part of a runner's batches, and every rank's vectors after.

The runner plans its batches the same way on every rank (the same inputs, the same cache
hits, agreed in ``common``), exactly as a single process would. Rank ``r`` of ``N`` encodes
batches ``r, r + N, r + 2N, ...``: a batch is the one a single process would encode, so its
embeddings are the same bits. On leaving a phase every rank sends what it encoded (the unit
float64 rows, and why an image could not be loaded) and keeps every rank's: every rank then
judges every test from the same numbers. An error in a rank's share is sent instead, and
every rank raises it (``distributed.raise_agreed``), forgetting what any rank encoded in
that phase, so that the ranks stay alike (a later test encodes those inputs again, as a
single process would). With ``lockstep`` (an FSDP model, whose
forward gathers weights with the other ranks) each rank makes ``ceil(batches / N)`` forward
calls per phase, dummy ones where its share is short or after its error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_vlcheck.run.distributed.collective import Collective, CollectiveError, describe
from pytest_vlcheck.run.distributed.wrapped_models import dummy_forward

if TYPE_CHECKING:
    from pytest_vlcheck.engine.runner.model_runner import ScoringStats


@dataclass
class RankShare:
    """This rank's share of one runner's batches (``engine.batch_share.BatchShare``);
    ``stats`` are the runner's (its forward calls are counted there), ``lockstep_scorer`` its
    scorer when the ranks must keep their forward calls in step (None: they need not)."""

    collective: Collective
    stats: ScoringStats
    lockstep_scorer: Any = None

    def common(self, items: Sequence[Hashable], hits: set[Any]) -> set[Any]:
        """The cache hits every rank has (another rank may have written more meanwhile)."""
        mine = "".join("1" if item in hits else "0" for item in items)
        answers = self.collective.exchange({"hits": mine})
        if any(len(a["hits"]) != len(items) for a in answers):
            raise CollectiveError(f"{_DIFFERENT}: {[len(a['hits']) for a in answers]} inputs")
        every = [all(a["hits"][i] == "1" for a in answers) for i in range(len(items))]
        return {item for item, hit in zip(items, every, strict=True) if hit}

    @contextlib.contextmanager
    def phase(
        self,
        kind: str,
        batches: list[list[Any]],
        into: dict[Any, Any],
        unavailable: dict[Any, str] | None = None,
    ) -> Iterator[list[list[Any]]]:
        rank, world = self.collective.rank, self.collective.world
        calls = _calls(self.stats, kind)
        error: Exception | None = None
        try:
            yield batches[rank::world]
        except Exception as exc:  # sent to the other ranks below; Ctrl-C just ends this one
            error = exc
        if self.lockstep_scorer is not None:
            done = _calls(self.stats, kind) - calls
            error = self._pad(kind, len(batches[0::world]) - done, error)
        keys = [_key(kind, item) for batch in batches[rank::world] for item in batch]
        rows = [into[key] for key in keys if key in into]
        lost = unavailable or {}
        reasons = {i: lost[key] for i, key in enumerate(keys) if key in lost}
        if error is None and len(rows) + len(reasons) != len(keys):
            error = CollectiveError(f"{kind} phase: {len(keys) - len(rows)} inputs not encoded")
        sent = {
            "error": None if error is None else describe(error, rank),
            "plan": [len(batches), sum(map(len, batches))],
            "rows": len(rows),
            "width": len(rows[0]) if rows else 0,
            "reasons": {str(i): reason for i, reason in reasons.items()},
        }
        try:
            answers = self.collective.exchange(sent)
        except Exception as agreed:
            for key in (_key(kind, item) for batch in batches for item in batch):
                into.pop(key, None)  # what some ranks encoded: every rank starts this again
                if unavailable is not None:
                    unavailable.pop(key, None)
            if error is not None:
                raise agreed from error
            raise
        if any(a["plan"] != sent["plan"] for a in answers):
            raise CollectiveError(f"{_DIFFERENT}: {[a['plan'] for a in answers]} batches, inputs")
        width = max(a["width"] for a in answers)
        local = np.stack(rows) if rows else np.zeros((0, width))
        gathered = self.collective.gather_rows(local, [a["rows"] for a in answers])
        for other, (answer, part) in enumerate(zip(answers, gathered, strict=True)):
            if other != rank:
                _keep(kind, batches[other::world], answer["reasons"], part, into, unavailable)

    def _pad(self, kind: str, missing: int, error: Exception | None) -> Exception | None:
        """The dummy forward calls that keep this rank in step with the others."""
        for _ in range(missing):
            try:
                dummy_forward(self.lockstep_scorer, kind)
            except Exception as exc:
                error = error or exc
        return error


_DIFFERENT = "evaluate: the ranks planned different work (an input changed on one rank)"


def _calls(stats: ScoringStats, kind: str) -> int:
    return stats.encode_text_calls if kind == "texts" else stats.encode_image_calls


def _key(kind: str, item: Any) -> Any:
    """A text is its own key; an image is kept under its ref's key."""
    return item if kind == "texts" else item.key


def _keep(
    kind: str,
    batches: list[list[Any]],
    reasons: dict[str, str],
    rows: np.ndarray,
    into: dict[Any, Any],
    unavailable: dict[Any, str] | None,
) -> None:
    """Another rank's vectors (and unloadable images) for its ``batches``, in order."""
    keys = [_key(kind, item) for batch in batches for item in batch]
    next_row = 0
    for index, key in enumerate(keys):
        if str(index) in reasons and unavailable is not None:
            unavailable[key] = reasons[str(index)]
        else:
            into[key] = rows[next_row]
            next_row += 1
