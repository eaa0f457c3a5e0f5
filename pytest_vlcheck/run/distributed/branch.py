"""The collective branch of ``evaluate`` (``run.distributed``): the model as the ranks score
it, and one run measured by every rank together."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.engine.runner.batch_share import WholeShare
from pytest_vlcheck.run.distributed.collective import Collective, summed_stats
from pytest_vlcheck.run.distributed.rank_share import RankShare
from pytest_vlcheck.run.distributed.wrapped_models import register_encoders, sharded, unwrapped

if TYPE_CHECKING:
    from pytest_vlcheck.run.outcome import Run
    from pytest_vlcheck.run.session import VlcheckSession


def for_ranks(model: Any) -> tuple[Any, bool]:
    """The model to score (DDP and ``torch.compile`` unwrapped, a root sharded by
    ``fully_shard`` with its encoders registered) and whether its forward is collective (FSDP:
    the ranks then call it in lockstep). A spec string is scored as it is."""
    if isinstance(model, str):
        return model, False
    model = unwrapped(model)
    collective = sharded(model)
    if collective:
        register_encoders(model)
    return model, collective


def shared_run(
    collective: Collective,
    session: VlcheckSession,
    measure: Callable[[], Run],
    lockstep: bool,
    scorer: Any,
) -> Run:
    """``measure`` with this rank encoding its share of every model's batches; the run's
    stats summed over the ranks (each rank's in ``Run.ranks``). An error on this rank is sent
    to the others, and every rank raises the same one. With ``lockstep`` (an FSDP model) the
    ranks keep their forward calls of ``scorer`` in step."""
    runners = [session.runner(spec.name) for spec in session.settings.specs]
    for runner in runners:
        runner.share = RankShare(collective, runner.stats, scorer if lockstep else None)
    try:
        return summed_stats(collective, measure())
    except Exception as exc:
        collective.failed(exc)
        raise
    finally:
        for runner in runners:
            runner.share = WholeShare()
