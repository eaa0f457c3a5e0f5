"""Prior specs (``--vl-prior`` / ``vlcheck audit --prior``): parse them and load the priors.

``hf:NAME_OR_DIR`` is a causal language model (``AutoModelForCausalLM``: GPT-2, OPT,
GPT-J, ...); ``py:MODULE:FACTORY`` is user code returning an object with
``text_nll(texts)``. ``NAME=SPEC`` names a prior. Backends are imported only when loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.priors.average import AveragePrior
from pytest_vlcheck.priors.protocol import TextPrior

SCHEMES = ("hf", "py")
_NAME = re.compile(r"[A-Za-z0-9_.@+-]+")


class PriorSpecError(ValueError):
    """A prior spec that cannot be understood."""


class PriorLoadError(VlcheckUserError, RuntimeError):
    """A prior spec was understood but its prior could not be made."""


@dataclass(frozen=True)
class PriorSpec:
    """One prior: ``name`` labels it, ``text`` is the spec as given."""

    name: str
    text: str
    scheme: str
    body: str


def parse_prior_spec(text: str) -> PriorSpec:
    """``[NAME=]hf:NAME_OR_DIR`` or ``[NAME=]py:MODULE:FACTORY``."""
    name, eq, spec = text.partition("=")
    if not eq or ":" in name:
        name, spec = "", text
    scheme, colon, body = spec.partition(":")
    if not colon or scheme not in SCHEMES:
        raise PriorSpecError(
            f"prior spec '{text}' is not understood; expected hf:NAME_OR_DIR (a causal "
            "language model) or py:MODULE:FACTORY (an object with text_nll(texts))"
        )
    if not body:
        raise PriorSpecError(f"prior spec '{text}' names nothing after '{scheme}:'")
    if name and not _NAME.fullmatch(name):
        raise PriorSpecError(f"prior name '{name}' may use letters, digits and _.@+- only")
    default = body.rstrip("/").rsplit("/", 1)[-1] if scheme == "hf" else body.rsplit(":", 1)[-1]
    return PriorSpec(name or default, text, scheme, body)


def load_prior(spec: PriorSpec, options: ModelOptions) -> TextPrior:
    """Build one prior; every failure becomes ``PriorLoadError`` naming the spec."""
    try:
        if spec.scheme == "hf":
            from pytest_vlcheck.priors.hf_lm import CausalLMPrior

            prior = CausalLMPrior(spec.body, options)
        else:
            from pytest_vlcheck.models.custom_backend import load as load_custom

            prior = load_custom(spec.body, options)
    except Exception as exc:
        raise PriorLoadError(f"cannot load prior '{spec.text}': {exc}") from exc
    if not callable(getattr(prior, "text_nll", None)):
        raise PriorLoadError(
            f"prior '{spec.text}' returned {type(prior).__name__}, which has no text_nll(texts)"
        )
    return prior


def load_priors(texts: Sequence[str], options: ModelOptions | None = None) -> AveragePrior:
    """Parse and load every spec; several priors are averaged as perplexities."""
    if not texts:
        raise PriorSpecError("no prior spec given")
    specs = [parse_prior_spec(text) for text in texts]
    options = options or ModelOptions()
    priors = tuple(load_prior(spec, options) for spec in specs)
    return AveragePrior(priors, "+".join(spec.name for spec in specs))
