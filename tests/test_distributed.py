"""``evaluate`` under torch.distributed: gloo process groups of 2 and 3 ranks on the CPU, one
spawn per world size, every variant (a live open_clip ``tiny`` and a transformers CLIP, each
plain, in DDP, sharded by FSDP2 and by FSDP1) in each (``distributed_ranks.py``)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from distributed_ranks import TIMEOUT, run_rank, write_checklist
from model_builders import build_hf_clip

from pytest_vlcheck.run.distributed import NOT_COLLECTIVE

VARIANTS = ("plain", "ddp", "fsdp2", "fsdp1")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module", params=[2, 3], ids=["2-ranks", "3-ranks"])
def ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """What each rank saw, one spawn per world size."""
    import torch.multiprocessing as mp

    world = request.param
    work = tmp_path_factory.mktemp(f"world{world}")
    write_checklist(work)
    hf_dir = build_hf_clip(work / "hf")
    mp.spawn(run_rank, args=(world, _free_port(), str(work), str(hf_dir)), nprocs=world)
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


def test_an_output_failing_on_rank_0_ends_every_rank_with_the_same_line(
    ranks: list[Any],
) -> None:
    lines = {tuple(seen["errors"]["logger"][:2]) for seen in ranks}
    assert lines == {
        ("CollectiveError", "evaluate failed on rank 0: RuntimeError: the logger is down")
    }
    assert all(seen["errors"]["logger"][2] < TIMEOUT for seen in ranks)


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
    assert [step for step, _ in first["runs"]] == [2, 4]
    assert all(seen["training"][framework]["runs"] == first["runs"] for seen in ranks)
    if framework == "transformers":  # the jsonl logger: one line per evaluation
        assert [json.loads(line)["step"] for line in first["log"]] == [2, 4]
    else:  # Lightning's CSV logger: a header, then one row per evaluation
        header = first["log"][0].split(",")
        assert [row.split(",")[header.index("step")] for row in first["log"][1:]] == ["2", "4"]


def test_a_spec_model_shares_its_batches_and_one_embedding_cache(ranks: list[Any]) -> None:
    for seen in ranks:
        spec = seen["spec"]
        assert spec["same_results"] == [True, True]
        assert spec["encoded"] == [[48], [0]]  # then every vector from the cache
        assert spec["cached"] == [[0], [48 * len(ranks)]]  # every rank read every vector


def test_torchrun_ranks_share_the_image_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vlcheck.engine.image_feed import loader_pool

    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    with loader_pool(8) as pool:
        assert pool._max_workers == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "16")
    with loader_pool(8) as pool:
        assert pool._max_workers == 1
