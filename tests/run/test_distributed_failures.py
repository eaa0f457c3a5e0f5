"""Issue 48, class 2: ranks. A rank killed mid-call and a rank that hangs are each named on
rank 0's line, without gloo's source path, within ``distributed_timeout`` (a few seconds
here); ``distributed`` and ``distributed_timeout`` are checked on any machine; a mismatch
names the argument that differs; ``CollectiveError`` is the package's.

Two gloo ranks on the CPU, started as in ``test_distributed.py``; the model is a ``py:``
scorer whose rank 1 kills itself or sleeps in its first forward call.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.checklist_text import BLUE, RED, checklist
from helpers.colour_scorer import SOURCE
from helpers.distributed_ranks import preloaded_forkserver
from PIL import Image

from pytest_vlcheck import CollectiveError, SettingsError, evaluate
from pytest_vlcheck.run.distributed.collective import differences, run_digest

TIMEOUT = 3.0
FAULTY = """
import os, signal, time
import torch.distributed as dist

def make():
    scorer = _make()
    encode = scorer.encode_images

    def faulty(images):
        if dist.get_rank() == 1:
            if os.environ["FAULT"] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(600)
        return encode(images)

    scorer.encode_images = faulty
    return scorer
"""


def _rank(rank: int, port: int, work: str, fault: str) -> None:
    """One rank: evaluate collectively; what rank 0 was told goes to ``rank0.json``."""
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), FAULT=fault)
    sys.path.insert(0, work)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    import pytest_vlcheck as vlcheck

    dist.barrier()  # both ranks call evaluate together (the handshake waits TIMEOUT)
    started = time.perf_counter()
    try:
        vlcheck.evaluate(
            "py:faulty_model:make",
            Path(work) / "checks.yaml",
            no_cache=True,
            batch_size=1,
            distributed_timeout=TIMEOUT,
        )
        told = "returned"
    except vlcheck.CollectiveError as exc:
        told = str(exc)
    seconds = time.perf_counter() - started
    Path(work, f"rank{rank}.json").write_text(json.dumps({"told": told, "seconds": seconds}))
    os._exit(0)  # the group cannot be torn down with a rank gone


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ranks(work: Path, fault: str) -> dict[str, Any]:
    """Spawn two ranks with ``fault`` on rank 1; rank 0's account (rank 1 ended after)."""
    for index, rgb in enumerate([(220, 20, 20), (20, 20, 220)]):
        Image.new("RGB", (8, 8), rgb).save(work / f"c{index}.png")
    (work / "checks.yaml").write_text(
        checklist(RED.replace("red.png", "c0.png"), BLUE.replace("blue.png", "c1.png"),
                  extra="    threshold: 0.0\n")
    )  # fmt: skip
    (work / "faulty_model.py").write_text(SOURCE.replace("def make():", "def _make():") + FAULTY)
    context = multiprocessing.get_context(preloaded_forkserver())
    port = _free_port()
    ranks = [context.Process(target=_rank, args=(r, port, str(work), fault)) for r in (0, 1)]
    for process in ranks:
        process.start()
    try:
        ranks[0].join(timeout=60)
        assert ranks[0].exitcode == 0, ranks[0].exitcode
    finally:
        for process in ranks:
            if process.is_alive():
                process.kill()
                process.join()
    return json.loads((work / "rank0.json").read_text())


@pytest.mark.parametrize("fault", ["kill", "hang"])
def test_a_rank_killed_or_hung_is_named_on_rank_0_within_the_timeout(
    tmp_path: Path, fault: str
) -> None:
    seen = _ranks(tmp_path, fault)
    told = seen["told"]
    assert told.startswith("evaluate on rank 0: rank 1 stopped answering within 3 s"), told
    assert "distributed_timeout=3" in told and "\n" not in told
    assert ".cc:" not in told and "gloo/" not in told, told
    assert seen["seconds"] < 3 * TIMEOUT + 5, seen  # the timeout, then the store's word
    if fault == "hang":
        assert seen["seconds"] >= TIMEOUT


@pytest.mark.parametrize(
    ("keywords", "named"),
    [
        ({"distributed": "no"}, "distributed: is 'no'; expected True"),
        ({"distributed_timeout": math.nan}, "distributed_timeout: is nan; expected a finite"),
        ({"distributed_timeout": 0}, "distributed_timeout: is 0; expected a finite"),
        ({"distributed_timeout": True}, "distributed_timeout: is True; expected a finite"),
    ],
)
def test_distributed_arguments_are_checked_on_any_machine(
    tmp_path: Path, keywords: dict[str, Any], named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        evaluate("py:nowhere:make", tmp_path, **keywords)


def test_a_mismatch_names_the_argument_that_differs(tmp_path: Path) -> None:
    from dataclasses import replace

    from pytest_vlcheck.run.settings import KeywordOptions, build_settings

    settings = build_settings(KeywordOptions({"step": 3}))
    mine = json.loads(run_digest(settings, [], None))
    moved = replace(settings, embedding_cache_dir=tmp_path / "elsewhere")
    theirs = json.loads(run_digest(moved, [], None))
    assert differences([mine, mine, theirs]) == (["2"], ["embedding_cache_dir"])
    batch = replace(settings, model_options=replace(settings.model_options, batch_size=7))
    assert differences([mine, json.loads(run_digest(batch, [], None))]) == (["1"], ["batch_size"])
    assert differences([mine, mine]) == ([], [])


def test_collective_error_is_the_packages() -> None:
    from pytest_vlcheck.run.distributed import collective

    assert CollectiveError is collective.CollectiveError
