"""The bundled suite evaluated collectively on 1, 2 and 3 CPU processes (gloo).

    python benchmarks/distributed_eval.py                         # the whole bundled suite
    python benchmarks/distributed_eval.py --select attribute/color --worlds 1 2

Each world size is one ``torch.multiprocessing`` spawn; every rank holds the shipped
``tiny`` model as a live open_clip model, takes ``cores // N`` torch threads, waits at a
barrier and times one ``evaluate(model, [], bundled=True)`` (collective for N > 1, a plain
call for N = 1), after one untimed single-process run has warmed the disk caches. Printed
per world size: the slowest rank's seconds and its ratio to one process, the inputs each rank
encoded, and whether the results equal the one-process run's (checked: the pass rates of
every test). On a machine with fewer cores than ranks no speed-up is expected: the numbers
then show the overhead of the handshake, the gathers and the shared image loading.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any


def _rank(rank: int, world: int, port: int, select: list[str] | None, out: str) -> None:
    import torch
    import torch.distributed as dist

    from pytest_vlcheck import evaluate
    from pytest_vlcheck.tiny import live_model

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(max(1, (cores or 1) // world))
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        os.environ.update(LOCAL_WORLD_SIZE=str(world))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        dist.barrier()
    model, preprocess, tokenizer = live_model()
    started = time.perf_counter()
    run = evaluate(
        model, [], bundled=True, select=select, preprocess=preprocess, tokenizer=tokenizer
    )
    seconds = time.perf_counter() - started
    stats = run.ranks or (run.stats,)
    encoded = [sum(s.images_encoded + s.texts_encoded for s in r.values()) for r in stats]
    rates = {f"{r.file}::{r.test}": r.pass_rate for r in run.results}
    Path(out, f"{world}-{rank}.json").write_text(
        json.dumps({"seconds": seconds, "encoded": encoded, "rates": rates}), encoding="utf-8"
    )
    if world > 1:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    import torch.multiprocessing as mp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", nargs="*", default=None, help="test ids or capabilities")
    parser.add_argument("--worlds", nargs="*", type=int, default=[1, 2, 3])
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="vlcheck-distributed-")
    seen: dict[int, list[dict[str, Any]]] = {}
    # untimed: scenes rendered and files read once, so no world size pays the cold start
    mp.spawn(_rank, args=(1, _free_port(), args.select, out), nprocs=1)
    for world in args.worlds:
        mp.spawn(_rank, args=(world, _free_port(), args.select, out), nprocs=world)
        seen[world] = [json.loads(Path(out, f"{world}-{r}.json").read_text()) for r in range(world)]
    first = seen[args.worlds[0]][0]
    print(f"{'processes':>9}  {'seconds':>8}  {'ratio':>6}  {'encoded per rank':<24} same results")
    for world, ranks in seen.items():
        slowest = max(rank["seconds"] for rank in ranks)
        ratio = slowest / max(first_seconds(seen[args.worlds[0]]), 1e-9)
        same = all(rank["rates"] == first["rates"] for rank in ranks)
        encoded = "/".join(str(n) for n in ranks[0]["encoded"])
        print(f"{world:>9}  {slowest:>8.1f}  {ratio:>6.2f}  {encoded:<24} {same}")


def first_seconds(ranks: list[dict[str, Any]]) -> float:
    """The slowest rank's seconds of a world size."""
    return max(rank["seconds"] for rank in ranks)


if __name__ == "__main__":
    main()
