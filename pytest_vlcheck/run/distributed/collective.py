"""``evaluate`` under ``torch.distributed``: every rank calls it, each encodes a share.

When a process group of more than one rank is initialised, ``evaluate`` is collective:

1. A handshake through the process group's store (so that a rank that never calls cannot
   make the others hang): each rank posts a digest of its checklists, selection, options and
   step, and waits ``HANDSHAKE_SECONDS`` for the others; a missing or different digest is one
   line on every rank that got there (``NOT_COLLECTIVE``).
2. The tool's own traffic then goes over a gloo side group (made once per process, after the
   first handshake), whose operations time out after ``EXCHANGE_SECONDS``: JSON envelopes
   (``exchange``) and the encoded vectors (``gather_rows``). Nothing is pickled.
3. Each rank encodes its share of the batches (``distributed_share``), every rank judges every
   test from the gathered vectors, so every rank returns the same ``Run``; only rank 0 writes
   report files and baselines and logs; an error on any rank ends every rank with one line.

torch is imported only when ``torch.distributed`` already is (a process group needs it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError

if TYPE_CHECKING:
    from pytest_vlcheck.checklist import ChecklistTest
    from pytest_vlcheck.run.outcome import Run
    from pytest_vlcheck.run.settings import Settings

T = TypeVar("T")

HANDSHAKE_SECONDS = 120.0
"""How long a rank waits for the others to call ``evaluate`` (they arrive together in a
training loop; a rank still finishing a step or a checkpoint gets two minutes)."""
EXCHANGE_SECONDS = 1800.0
"""How long a rank waits in one of the tool's exchanges: the slowest rank's share of one
batch phase must fit (the bundled suite's largest phase on a CPU is minutes, on a GPU
seconds), like the 30 minutes torch gives a gloo group."""
LOST_RANK_SECONDS = 5.0
"""After a failed exchange, how long a rank waits for the others to say they are alive."""
NOT_COLLECTIVE = (
    "evaluate is collective under torch.distributed; call it on every rank, or pass "
    "distributed=False"
)
_CALLS = itertools.count()
_SIDE_GROUPS: dict[tuple[int, float], Any] = {}


class CollectiveError(RuntimeError):
    """A rank failed: every rank raises this same line (its ``rank`` says whose it was)."""

    agreed: bool = False
    """Whether the other ranks know of it already (or cannot hear of it): not sent again."""


@dataclass
class Collective:
    """This rank's place in the job and the tool's gloo side group."""

    rank: int
    world: int
    timeout: float
    group: Any = field(default=None, repr=False)
    call: str = ""
    """The store prefix of this call (set by the handshake)."""

    def handshake(self, digest: str) -> None:
        """Every rank posts ``digest`` and waits for the others' (see the module doc); the
        side group is made once every rank is known to be here."""
        import torch.distributed as dist

        store = dist.distributed_c10d._get_default_store()
        prefix = f"vlcheck/evaluate/{next(_CALLS)}/"
        store.set(prefix + str(self.rank), digest)
        keys = [prefix + str(rank) for rank in range(self.world)]
        try:
            store.wait(keys, timedelta(seconds=min(self.timeout, HANDSHAKE_SECONDS)))
        except Exception:  # the store's timeout error differs across torch versions
            absent = [str(r) for r, key in enumerate(keys) if not store.check([key])]
            raise CollectiveError(
                f"{NOT_COLLECTIVE} (rank {', '.join(absent) or '?'} did not call it within "
                f"{min(self.timeout, HANDSHAKE_SECONDS):g} s)"
            ) from None
        differ, parts = differences([json.loads(store.get(key).decode()) for key in keys])
        if differ:
            raise CollectiveError(
                f"{NOT_COLLECTIVE} with the same checklists, selection, options and step "
                f"(rank {', '.join(differ)} called it with another {' and '.join(parts)} than "
                "rank 0; a relative path names another folder under another working folder)"
            )
        self.call = prefix
        self.group = _side_group(self.timeout)

    def exchange(self, payload: Any) -> list[Any]:
        """Every rank's JSON-able ``payload``, in rank order; an ``error`` payload from any
        rank raises that error on every rank (``raise_agreed``)."""
        import torch
        import torch.distributed as dist

        data = torch.frombuffer(bytearray(json.dumps(payload).encode("utf-8")), dtype=torch.uint8)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world)]
        self._collect(dist.all_gather, sizes, torch.tensor([data.numel()]))
        longest = int(max(size.item() for size in sizes))
        padded = torch.zeros(longest, dtype=torch.uint8)
        padded[: data.numel()] = data
        parts = [torch.zeros(longest, dtype=torch.uint8) for _ in range(self.world)]
        self._collect(dist.all_gather, parts, padded)
        answers = [
            json.loads(bytes(part[: int(size.item())].tolist()).decode("utf-8"))
            for part, size in zip(parts, sizes, strict=True)
        ]
        raise_agreed(answers)
        return answers

    def gather_rows(self, rows: Any, counts: list[int]) -> list[Any]:
        """Every rank's float64 rows [counts[rank], d], from this rank's ``rows`` (the counts
        and the width were exchanged before)."""
        import torch
        import torch.distributed as dist

        padded = torch.zeros((max(counts), rows.shape[1]), dtype=torch.float64)
        padded[: len(rows)] = torch.from_numpy(rows)
        parts = [torch.zeros_like(padded) for _ in range(self.world)]
        self._collect(dist.all_gather, parts, padded)
        return [part[:count].numpy() for part, count in zip(parts, counts, strict=True)]

    def _collect(self, operation: Callable[..., Any], *args: Any) -> None:
        try:
            operation(*args, group=self.group)
        except RuntimeError as exc:
            lost = self._lost_ranks()
            who = f"rank {', '.join(map(str, lost))}" if lost else "a rank"
            error = CollectiveError(
                f"evaluate on rank {self.rank}: {who} stopped answering within "
                f"{self.timeout:g} s (killed, failed outside evaluate, or hung; "
                f"distributed_timeout={self.timeout:g}): {_plain(exc)}"
            )
            error.agreed = True  # the lost rank cannot hear of it: nothing to send
            raise error from None

    def _lost_ranks(self) -> list[int]:
        """The ranks that did not say, through the store, that they are still here: every
        rank whose exchange failed posts its number and waits a little for the others'."""
        import torch.distributed as dist

        try:
            store = dist.distributed_c10d._get_default_store()
            here = self.call + "here/"
            store.set(here + str(self.rank), "1")
            keys = [here + str(rank) for rank in range(self.world)]
            deadline = time.monotonic() + min(self.timeout, LOST_RANK_SECONDS)
            while True:  # polled, not store.wait: a store's timeout logs lines of its own
                lost = [rank for rank, key in enumerate(keys) if not store.check([key])]
                if not lost or time.monotonic() >= deadline:
                    return lost
                time.sleep(0.05)
        except Exception:  # the store went with its host (rank 0): no one to ask
            return []

    def failed(self, exc: BaseException) -> None:
        """Tell the other ranks, which wait in their next exchange, that this one failed
        (an error every rank already agreed on is not sent again)."""
        if not getattr(exc, "agreed", False):
            self.exchange({"error": describe(exc, self.rank)})


def collective(distributed: bool, timeout: float | None) -> Collective | None:
    """This rank's ``Collective`` when ``evaluate`` is collective: ``distributed`` and an
    initialised process group of more than one rank; else None."""
    if not distributed or "torch.distributed" not in sys.modules:
        return None
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    seconds = EXCHANGE_SECONDS if timeout is None else float(timeout)
    return Collective(dist.get_rank(), dist.get_world_size(), seconds)


def describe(exc: BaseException, rank: int) -> dict[str, Any]:
    """An error as the other ranks raise it: its kind, first line and rank."""
    kind = (
        "load"
        if isinstance(exc, ModelLoadError)
        else "user"
        if isinstance(exc, VlcheckUserError)
        else type(exc).__name__
    )
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return {"kind": kind, "message": message, "rank": rank}


def raise_agreed(answers: list[Any]) -> None:
    """Raise the first failed rank's error, the same on every rank: a user mistake stays one
    (``VlcheckUserError``, ``ModelLoadError``), anything else is a ``CollectiveError``."""
    errors = [a["error"] for a in answers if isinstance(a, dict) and a.get("error")]
    if not errors:
        return
    first = errors[0]
    same = len(errors) == len(answers) and all(e["message"] == first["message"] for e in errors)
    where = "" if same else f"rank {first['rank']}: "
    error: Any
    if first["kind"] == "load":
        error = ModelLoadError(where + first["message"])
    elif first["kind"] == "user":
        error = VlcheckUserError(where + first["message"])
    else:
        error = CollectiveError(
            f"evaluate failed on rank {first['rank']}: {first['kind']}: {first['message']}"
        )
    error.agreed = True
    raise error


def differences(digests: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """The ranks whose ``run_digest`` differs from rank 0's, and the arguments that differ."""
    first = digests[0]
    ranks = [str(rank) for rank, digest in enumerate(digests) if digest != first]
    parts = sorted({part for d in digests for part in d if d.get(part) != first.get(part)})
    return ranks, parts


def run_digest(settings: Settings, tests: list[ChecklistTest], select: Any) -> str:
    """What every rank must agree on, as a JSON object of one hash per argument (so a
    mismatch names it): the tests (ids and contents), the selection, each option and the
    step; a rank's own device and the identity of a logging callable aside."""
    options = replace(settings.model_options, device="")
    logs = [spec if isinstance(spec, str) else type(spec).__name__ for spec in settings.log_specs]
    described = replace(settings, model_options=options, log_specs=tuple(logs))
    parts = {
        "checklists": [[str(t.file), t.id, t.content_hash] for t in tests],
        "select": repr(select),
        **{f.name: repr(getattr(options, f.name)) for f in fields(options)},
        **{f.name: repr(getattr(described, f.name)) for f in fields(described)},
    }
    parts.pop("model_options")
    return json.dumps(
        {
            name: hashlib.sha256(json.dumps(value).encode("utf-8")).hexdigest()[:16]
            for name, value in parts.items()
        },
        sort_keys=True,
    )


def summed_stats(collective: Collective, run: Run) -> Run:
    """The run with its stats summed over the ranks, and each rank's in ``Run.ranks``."""
    from pytest_vlcheck.engine.runner.stats import ScoringStats, summed_per_model

    mine = {name: asdict(stats) for name, stats in run.stats.items()}
    every = collective.exchange({"stats": mine})
    ranks = tuple(
        {name: ScoringStats(**values) for name, values in answer["stats"].items()}
        for answer in every
    )
    return replace(run, stats=summed_per_model(ranks), ranks=ranks)


def _plain(exc: BaseException) -> str:
    """The first line of a communication library's error, without its source path
    (gloo's ``[.../gloo/transport/tcp/pair.cc:545] ``)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return re.sub(r"\[[^\]]*\.(?:cc|cpp|c|h|hpp):\d+\]\s*", "", first)[:200]


def on_rank_zero(collective: Collective, output: Callable[[], None]) -> None:
    """Run ``output`` (files, baselines, loggers) on rank 0 only; every rank learns whether
    it worked, and all raise its error if not."""
    status: dict[str, Any] = {}
    if collective.rank == 0:
        try:
            output()
        except Exception as exc:
            status = {"error": describe(exc, 0)}
    collective.exchange(status)


def _side_group(timeout: float) -> Any:
    """The gloo group for the tool's traffic, made once per process and timeout (making one
    is collective: every rank gets here together, after the handshake)."""
    import torch.distributed as dist

    key = (id(dist.group.WORLD), timeout)
    if key not in _SIDE_GROUPS:
        _SIDE_GROUPS[key] = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout))
    return _SIDE_GROUPS[key]
