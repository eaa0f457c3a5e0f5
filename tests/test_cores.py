"""The one sizing rule of loader threads and cores among a machine's torchrun ranks."""

from __future__ import annotations

from pytest_vlcheck.cores import rank_share


def test_a_rank_takes_its_share_of_the_machine_and_never_none() -> None:
    assert rank_share(16, {}) == 16
    assert rank_share(16, {"LOCAL_WORLD_SIZE": "4"}) == 4
    assert rank_share(10, {"LOCAL_WORLD_SIZE": "4"}) == 2  # floored
    assert rank_share(16, {"LOCAL_WORLD_SIZE": "32"}) == 1
    assert rank_share(16, {"PYTEST_XDIST_WORKER_COUNT": "4"}) == 16  # xdist workers take all
    assert rank_share(16, {"LOCAL_WORLD_SIZE": "x"}) == 16  # not a count: not divided
