"""Linguistic priors (seed 001): text-only language models that score captions by perplexity.

``registry`` parses ``--vl-prior`` / ``--prior`` specs and loads them; ``hf_lm`` is the
causal-LM backend; ``average`` combines several priors as the seed's AVG_LM does. The names
below are imported on first use (``pytest_vlcheck.lazy``): a run without ``--vl-prior``
never loads numpy for them.
"""

from typing import TYPE_CHECKING

from pytest_vlcheck.lazy import lazy_exports

if TYPE_CHECKING:  # the names as mypy sees them (``_EXPORTS`` resolves them at run time)
    from pytest_vlcheck.priors.average import AveragePrior as AveragePrior
    from pytest_vlcheck.priors.average import caption_perplexities as caption_perplexities
    from pytest_vlcheck.priors.protocol import PriorSpec as PriorSpec
    from pytest_vlcheck.priors.protocol import TextPrior as TextPrior
    from pytest_vlcheck.priors.registry import PriorLoadError as PriorLoadError
    from pytest_vlcheck.priors.registry import PriorSpecError as PriorSpecError
    from pytest_vlcheck.priors.registry import load_prior as load_prior
    from pytest_vlcheck.priors.registry import load_priors as load_priors
    from pytest_vlcheck.priors.registry import parse_prior_spec as parse_prior_spec

_AVERAGE = "pytest_vlcheck.priors.average"
_REGISTRY = "pytest_vlcheck.priors.registry"
_EXPORTS = {
    "AveragePrior": _AVERAGE,
    "PriorLoadError": _REGISTRY,
    "PriorSpec": "pytest_vlcheck.priors.protocol",
    "PriorSpecError": _REGISTRY,
    "TextPrior": "pytest_vlcheck.priors.protocol",
    "caption_perplexities": _AVERAGE,
    "load_prior": _REGISTRY,
    "load_priors": _REGISTRY,
    "parse_prior_spec": _REGISTRY,
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
