"""Pure metric functions over fp32 score arrays and outcome vectors, one module per family.

``choice``: the task metrics (caption, image, group, match), Wilson intervals and slices.
Further families (paired statistics, aggregates, clustered intervals, prior metrics) live
beside it and are imported from their own modules. The names below are imported on first use
(``pytest_vlcheck.lazy``), so that importing one family does not load numpy for the others.
"""

from typing import TYPE_CHECKING

from pytest_vlcheck.lazy import lazy_exports

if TYPE_CHECKING:  # the names as mypy sees them (``_EXPORTS`` resolves them at run time)
    from pytest_vlcheck.metrics.choice import GROUP_CHANCE as GROUP_CHANCE
    from pytest_vlcheck.metrics.choice import MATCH_CHANCE as MATCH_CHANCE
    from pytest_vlcheck.metrics.choice import ORDERED_TIE_RULES as ORDERED_TIE_RULES
    from pytest_vlcheck.metrics.choice import TIE_RULES as TIE_RULES
    from pytest_vlcheck.metrics.choice import Z95 as Z95
    from pytest_vlcheck.metrics.choice import beats_all as beats_all
    from pytest_vlcheck.metrics.choice import beats_in_order as beats_in_order
    from pytest_vlcheck.metrics.choice import choice_chance as choice_chance
    from pytest_vlcheck.metrics.choice import decided_by_tie as decided_by_tie
    from pytest_vlcheck.metrics.choice import group_caption_choices as group_caption_choices
    from pytest_vlcheck.metrics.choice import group_outcomes as group_outcomes
    from pytest_vlcheck.metrics.choice import match_accuracies as match_accuracies
    from pytest_vlcheck.metrics.choice import match_correct as match_correct
    from pytest_vlcheck.metrics.choice import pad_rows as pad_rows
    from pytest_vlcheck.metrics.choice import prompt_ensemble as prompt_ensemble
    from pytest_vlcheck.metrics.choice import slice_rates as slice_rates
    from pytest_vlcheck.metrics.choice import top_set_chance as top_set_chance
    from pytest_vlcheck.metrics.choice import wilson_interval as wilson_interval
    from pytest_vlcheck.metrics.choice import wilson_interval_at as wilson_interval_at

_EXPORTS = dict.fromkeys(
    [
        "GROUP_CHANCE",
        "MATCH_CHANCE",
        "ORDERED_TIE_RULES",
        "TIE_RULES",
        "Z95",
        "beats_all",
        "beats_in_order",
        "choice_chance",
        "decided_by_tie",
        "group_caption_choices",
        "group_outcomes",
        "match_accuracies",
        "match_correct",
        "pad_rows",
        "prompt_ensemble",
        "slice_rates",
        "top_set_chance",
        "wilson_interval",
        "wilson_interval_at",
    ],
    "pytest_vlcheck.metrics.choice",
)

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
