"""Which of a runner's batches this process encodes: the seam that lets ``evaluate`` split
the forward passes across the ranks of a ``torch.distributed`` job.

A runner plans its batches the same way in every process; a share picks this process's part
(``phase``) and, once the part is encoded, makes every batch's vectors known to this process
(``run.distributed.rank_share``). ``WholeShare``, the default, encodes every batch here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, Protocol


class BatchShare(Protocol):
    """How a runner's batches are shared out (see the module doc)."""

    def common(self, items: Sequence[Hashable], hits: set[Any]) -> set[Any]:
        """Of ``hits`` (items this process read from the embedding cache), those that every
        process read: the rest are encoded, so that every process plans the same batches."""
        ...

    def phase(
        self,
        kind: str,
        batches: list[list[Any]],
        into: dict[Any, Any],
        unavailable: dict[Any, str] | None = None,
    ) -> contextlib.AbstractContextManager[list[list[Any]]]:
        """This process's ``batches`` of ``kind`` ("texts" or "images") to encode into ``into``;
        on leaving, ``into`` (and ``unavailable``) hold what every batch gave."""
        ...


class WholeShare:
    """Every batch encoded in this process (a run outside ``torch.distributed``)."""

    def common(self, items: Sequence[Hashable], hits: set[Any]) -> set[Any]:
        return hits

    @contextlib.contextmanager
    def phase(
        self,
        kind: str,
        batches: list[list[Any]],
        into: dict[Any, Any],
        unavailable: dict[Any, str] | None = None,
    ) -> Iterator[list[list[Any]]]:
        yield batches
