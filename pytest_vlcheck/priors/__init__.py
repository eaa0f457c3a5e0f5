"""Linguistic priors (seed 001): text-only language models that score captions by perplexity.

``registry`` parses ``--vl-prior`` / ``--prior`` specs and loads them; ``hf_lm`` is the
causal-LM backend; ``average`` combines several priors as the seed's AVG_LM does.
"""

from pytest_vlcheck.priors.average import AveragePrior, caption_perplexities
from pytest_vlcheck.priors.protocol import TextPrior
from pytest_vlcheck.priors.registry import (
    PriorLoadError,
    PriorSpec,
    PriorSpecError,
    load_prior,
    load_priors,
    parse_prior_spec,
)

__all__ = [
    "AveragePrior",
    "PriorLoadError",
    "PriorSpec",
    "PriorSpecError",
    "TextPrior",
    "caption_perplexities",
    "load_prior",
    "load_priors",
    "parse_prior_spec",
]
