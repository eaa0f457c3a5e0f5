"""Pure metric functions over fp32 score arrays and outcome vectors, one module per family.

``choice``: the task metrics (caption, image, group, match), Wilson intervals and slices.
Further families (paired statistics, aggregates, prior metrics) live beside it and are
imported from their own modules.
"""

from pytest_vlcheck.metrics.choice import (
    GROUP_CHANCE,
    MATCH_CHANCE,
    TIE_RULES,
    Z95,
    beats_all,
    choice_chance,
    decided_by_tie,
    group_caption_choices,
    group_outcomes,
    match_accuracies,
    match_correct,
    pad_rows,
    prompt_ensemble,
    slice_rates,
    top_set_chance,
    wilson_interval,
)

__all__ = [
    "GROUP_CHANCE",
    "MATCH_CHANCE",
    "TIE_RULES",
    "Z95",
    "beats_all",
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
]
