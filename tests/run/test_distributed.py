"""``evaluate`` under torch.distributed: gloo process groups of 2 and 3 ranks on the CPU, one
spawn per world size, every variant (a live open_clip ``tiny`` and a transformers CLIP, each
plain, in DDP, sharded by FSDP2 and by FSDP1) in each (``distributed_ranks.py``)."""

from __future__ import annotations

import json
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers.distributed_ranks import TIMEOUT, preloaded_forkserver, run_rank, write_checklist
from helpers.model_builders import build_hf_clip

from pytest_vlcheck.run.distributed.collective import NOT_COLLECTIVE

VARIANTS = ("plain", "ddp", "fsdp2", "fsdp1")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_ranks(world: int, work: Path, hf_dir: Path) -> None:
    """Start ``world`` rank processes (``run_rank``) and wait for them."""
    import torch.multiprocessing as mp

    args = (world, _free_port(), str(work), str(hf_dir))
    mp.start_processes(run_rank, args=args, nprocs=world, start_method=preloaded_forkserver())


@pytest.fixture(scope="module", params=[2, 3], ids=["2-ranks", "3-ranks"])
def ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """What each rank saw, one spawn per world size."""
    import torch.multiprocessing as mp

    world = request.param
    work = tmp_path_factory.mktemp(f"world{world}")
    write_checklist(work)
    hf_dir = build_hf_clip(work / "hf")
    try:
        _start_ranks(world, work, hf_dir)
    except mp.ProcessExitedException as crash:
        # A rank killed by a signal (a native abort: glibc once reported a corrupt heap in
        # rank 0 beside a loaded xdist worker, not reproduced alone) is retried once, loudly;
        # a second crash, or any Python error in a rank, fails every test of this world size.
        if crash.exit_code >= 0:
            raise
        warnings.warn(f"{world} ranks: {crash}; spawning them again", stacklevel=1)
        work = tmp_path_factory.mktemp(f"world{world}-again")  # no cache or report kept
        write_checklist(work)
        _start_ranks(world, work, hf_dir)
    return [json.loads((work / f"rank{r}.json").read_text()) for r in range(world)]


@pytest.mark.parametrize("family", ["open_clip", "transformers"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rank_returns_the_single_process_results(
    ranks: list[Any], family: str, variant: str
) -> None:
    for seen in ranks:
        assert seen[family][variant]["same_results"]
        assert "error" not in seen[family][variant]["statuses"]


@pytest.mark.parametrize("family", ["open_clip", "transformers"])
def test_distributed_false_runs_the_whole_evaluation_on_each_rank(
    ranks: list[Any], family: str
) -> None:
    for seen in ranks:
        assert seen[family]["alone"] == {"ranks": 0, "encoded": [48]}


@pytest.mark.parametrize("family", ["open_clip", "transformers"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_rank_encodes_its_share(ranks: list[Any], family: str, variant: str) -> None:
    seen = ranks[0][family][variant]
    (total,) = seen["total"]
    assert total == 2 * 24  # every image and caption once, over all ranks
    for (encoded,) in seen["encoded"]:
        assert abs(encoded - total / len(ranks)) <= 0.1 * total / len(ranks)
    assert all(other[family][variant]["encoded"] == seen["encoded"] for other in ranks)


@pytest.mark.parametrize("variant", VARIANTS)
def test_only_rank_0_writes_reports_and_logs_each_scalar_once(
    ranks: list[Any], variant: str
) -> None:
    for family in ("open_clip", "transformers"):
        first = ranks[0][family][variant]
        assert {"/report-" + variant + "/matrix.json"} <= set(first["writes"])
        assert first["logged"] == [[first["scalars"], 7]]
        for seen in ranks[1:]:
            assert seen[family][variant]["writes"] == []
            assert seen[family][variant]["logged"] == []


@pytest.mark.parametrize("variant", ["fsdp2", "fsdp1"])
def test_a_sharded_model_has_the_checksum_of_its_weights_unsharded(
    ranks: list[Any], variant: str
) -> None:
    for seen in ranks:
        for family in ("open_clip", "transformers"):
            one = seen[family][variant]
            assert one["checksum"] == one["single_checksum"]


def test_a_scorer_failing_on_one_rank_is_the_same_error_row_on_every_rank(
    ranks: list[Any],
) -> None:
    messages = [seen["errors"]["tokenizer"] for seen in ranks]
    assert all(m == messages[0] for m in messages)
    (message,) = messages[0]
    assert message.startswith("rank 1: ") and "this tokenizer fails on rank 1" in message


def test_a_model_failing_on_one_rank_ends_every_rank_with_the_same_line(
    ranks: list[Any],
) -> None:
    lines = {tuple(seen["errors"]["fatal"][:2]) for seen in ranks}
    assert lines == {("ModelLoadError", "rank 1: the text tower's weights are missing on rank 1")}
    assert all(seen["errors"]["fatal"][2] < TIMEOUT for seen in ranks)


def test_evaluate_on_rank_0_alone_fails_with_the_hint(ranks: list[Any]) -> None:
    kind, message, seconds = ranks[0]["errors"]["alone"]
    assert kind == "CollectiveError"
    assert message.startswith(NOT_COLLECTIVE)
    assert "did not call it within 5 s" in message
    assert seconds < TIMEOUT


@pytest.mark.parametrize("framework", ["transformers", "lightning"])
def test_the_callbacks_evaluate_on_every_rank_and_log_once(
    ranks: list[Any], framework: str
) -> None:
    if len(ranks) != 2:
        pytest.skip("the trainings run in the 2-rank job")
    first = ranks[0]["training"][framework]
    # after optimizer steps 2 and 4; Lightning draws those at its own step, one less
    steps = [2, 4] if framework == "transformers" else [1, 3]
    assert [step for step, _ in first["runs"]] == steps
    assert all(seen["training"][framework]["runs"] == first["runs"] for seen in ranks)
    if framework == "transformers":  # the jsonl logger: one line per evaluation
        assert [json.loads(line)["step"] for line in first["log"]] == [2, 4]
    else:  # Lightning's CSV logger: a header, then one row per evaluation
        header = first["log"][0].split(",")
        assert [row.split(",")[header.index("step")] for row in first["log"][1:]] == ["1", "3"]


def test_a_spec_model_shares_its_batches_and_one_embedding_cache(ranks: list[Any]) -> None:
    for seen in ranks:
        spec = seen["spec"]
        assert spec["same_results"] == [True, True]
        assert spec["encoded"] == [[48], [0]]  # then every vector from the cache
        assert spec["cached"] == [[0], [48 * len(ranks)]]  # every rank read every vector


def test_torchrun_ranks_share_the_image_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vlcheck.cores import usable_cores
    from pytest_vlcheck.engine.feed.pipeline import cpu_threads, loader_pool
    from pytest_vlcheck.images.pool import preparation

    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    with loader_pool() as pool:
        assert pool._max_workers == 2
    assert cpu_threads() == max(1, usable_cores() // 4)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "16")
    with loader_pool() as pool:
        assert pool._max_workers == 1
    crowded = {"LOCAL_WORLD_SIZE": "16", "PYTEST_XDIST_WORKER_COUNT": str(usable_cores())}
    assert preparation(None, crowded) == (1, 0)  # one core, 8 // 16 threads: still one


def test_every_rank_raises_the_first_failed_ranks_error() -> None:
    from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError
    from pytest_vlcheck.run.distributed.collective import CollectiveError, describe, raise_agreed

    ok: dict[str, Any] = {}
    user = {"error": describe(VlcheckUserError("images: 3 missing\nmore"), 1)}
    with pytest.raises(VlcheckUserError, match=r"^rank 1: images: 3 missing$"):
        raise_agreed([ok, user, ok])
    with pytest.raises(VlcheckUserError, match=r"^images: 3 missing$"):  # every rank: no prefix
        raise_agreed([user, user])
    with pytest.raises(ModelLoadError, match=r"^rank 0: gone$"):
        raise_agreed([{"error": describe(ModelLoadError("gone"), 0)}, ok])
    crash = {"error": describe(RuntimeError("CUDA out of memory"), 2)}
    with pytest.raises(CollectiveError, match=r"^evaluate failed on rank 2: RuntimeError: CUDA"):
        raise_agreed([ok, ok, crash])
    raise_agreed([ok, {"rows": 3}])  # nothing failed


def test_the_handshake_digest_ignores_the_ranks_device_and_callables(tmp_path: Path) -> None:
    from dataclasses import replace

    from pytest_vlcheck.run.checklists import checklist_files, load_tests
    from pytest_vlcheck.run.distributed.collective import run_digest
    from pytest_vlcheck.run.settings import KeywordOptions, build_settings

    tests = load_tests(checklist_files([write_checklist(tmp_path)]), None)
    settings = build_settings(KeywordOptions({"step": 3, "log": [print]}))
    mine = run_digest(settings, tests, None)
    other = replace(settings, model_options=replace(settings.model_options, device="cuda:1"))
    assert run_digest(replace(other, log_specs=(len,)), tests, None) == mine
    assert run_digest(replace(settings, step=4), tests, None) != mine
    assert run_digest(settings, tests[:1], None) != mine
    assert run_digest(settings, tests, ["shades0"]) != mine
