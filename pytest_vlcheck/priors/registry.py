"""Prior specs (``--vl-prior`` / ``vlcheck audit --prior``): parse them and load the priors.

``hf:NAME_OR_DIR`` is a causal language model (``AutoModelForCausalLM``: GPT-2, OPT,
GPT-J, ...); ``py:MODULE:FACTORY`` is user code returning an object with
``text_nll(texts)``. ``NAME=SPEC`` names a prior. ``PRIORS`` holds the schemes, in the one
registry shape (``pytest_vlcheck.registry``; no entry-point group: ``py:`` is the way in for
a prior of one's own). Backends are imported only when loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.models.registry import ModelSpec, identify
from pytest_vlcheck.priors.average import AveragePrior
from pytest_vlcheck.priors.cached import CachedPrior
from pytest_vlcheck.priors.protocol import PriorSpec, TextPrior
from pytest_vlcheck.registry import Registry

if TYPE_CHECKING:
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

PRIORS: Registry[Callable[[str, ModelOptions], Any]] = Registry(
    "prior scheme",
    {
        "hf": "pytest_vlcheck.priors.hf_lm:CausalLMPrior",
        "py": "pytest_vlcheck.models.backends.custom:load",
    },
)
"""Each scheme's ``(body, options) -> prior`` (checked for ``text_nll`` when loaded)."""
_NAME = re.compile(r"[A-Za-z0-9_.@+-]+")


class PriorSpecError(ValueError):
    """A prior spec that cannot be understood."""


class PriorLoadError(VlcheckUserError, RuntimeError):
    """A prior spec was understood but its prior could not be made."""


def parse_prior_spec(text: str) -> PriorSpec:
    """``[NAME=]hf:NAME_OR_DIR`` or ``[NAME=]py:MODULE:FACTORY``."""
    name, eq, spec = text.partition("=")
    if not eq or ":" in name:
        name, spec = "", text
    scheme, colon, body = spec.partition(":")
    if not colon or scheme not in PRIORS:
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
        prior = PRIORS[spec.scheme](spec.body, options)
    except Exception as exc:
        raise PriorLoadError(f"cannot load prior '{spec.text}': {exc}") from exc
    if not callable(getattr(prior, "text_nll", None)):
        raise PriorLoadError(
            f"prior '{spec.text}' returned {type(prior).__name__}, which has no text_nll(texts)"
        )
    return cast(TextPrior, prior)  # a factory's result (Any): its text_nll is checked above


def load_priors(
    texts: Sequence[str], options: ModelOptions | None = None, cache: EmbeddingCache | None = None
) -> AveragePrior:
    """Parse and load every spec; several priors are averaged as perplexities. With
    ``cache``, a prior whose identity is known without loading it (see ``cached``) is
    loaded only if some text's NLL is not cached."""
    if not texts:
        raise PriorSpecError("no prior spec given")
    specs = [parse_prior_spec(text) for text in texts]
    options = options or ModelOptions()
    priors = tuple(_cached_or_loaded(spec, options, cache) for spec in specs)
    return AveragePrior(
        priors, "+".join(spec.name for spec in specs), tuple(spec.text for spec in specs)
    )


def _cached_or_loaded(
    spec: PriorSpec, options: ModelOptions, cache: EmbeddingCache | None
) -> TextPrior:
    if cache is None or not cache.enabled:
        return load_prior(spec, options)
    model_spec = ModelSpec(spec.name, spec.text, spec.scheme, spec.body)
    identity = identify(model_spec, options, cache.file_digest)  # hf: and py: as for models
    if identity is None:
        return load_prior(spec, options)
    return CachedPrior(spec, options, identity, cache, lambda: load_prior(spec, options))
