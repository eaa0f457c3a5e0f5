"""Where a runner's scorer comes from and who it is, apart from the scores it serves.

``ScorerSource`` builds the scorer from its spec on first need, or holds one built already (a
live model or a scorer object handed to ``evaluate``), chooses its scoring path once, and
names the embedding-cache namespace its vectors go in: from the backend's ``identify`` when
it has one (no model built, no torch imported), else from the built scorer's fingerprint; a
scorer without a fingerprint gets none, so nothing is cached under a name that cannot tell
weights apart. ``KnownModel`` is what the cache remembers of a model, so that a fully
cached re-run need not build it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pytest_vlcheck.engine.scores.content_keys import namespace
from pytest_vlcheck.errors import (
    ModelLoadError,
    ScorerProtocolError,
    UserCodeError,
    VlcheckUserError,
    user_frame,
)
from pytest_vlcheck.models.batching import calibrated_sigmoid
from pytest_vlcheck.models.protocol import (
    DualEncoder,
    ModelIdentity,
    ModelOptions,
    RefScorer,
    Scorer,
    check_rows,
    scorer_fingerprint,
)
from pytest_vlcheck.models.registry import (
    BUILTIN_BACKENDS,
    ModelSpec,
    identify,
    load_scorer,
    run_precision,
)

if TYPE_CHECKING:
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

ScoringMode = Literal["refs", "dual", "pairs"]
CACHED_MODES = ("dual", "pairs")


@dataclass(frozen=True)
class KnownModel:
    """What the cache remembers of a model, so a fully cached run need not build it."""

    mode: ScoringMode
    sigmoid: tuple[float, float] | None = None
    own_match: bool = False
    """The scorer has a ``match_probability`` of its own (not a plain calibrated sigmoid)."""
    exp: bool = False
    """Its scores are log-probabilities and its match probability their ``exp``
    (``match_is_exp``: a generative model's), known without building it."""

    def to_json(self) -> str:
        """The meta row's text."""
        return json.dumps(
            {"mode": self.mode, "sigmoid": self.sigmoid, "own_match": self.own_match}
            | ({"exp": True} if self.exp else {})
        )

    @staticmethod
    def from_json(text: str | None) -> KnownModel | None:
        """The meta row read back; anything unexpected is None (the model is built)."""
        try:
            data = json.loads(text or "")
            sigmoid = data["sigmoid"]
            if data["mode"] not in CACHED_MODES or not isinstance(data["own_match"], bool):
                return None
            if sigmoid is not None:
                scale, bias = (float(v) for v in sigmoid)
                sigmoid = (scale, bias)
            exp = data.get("exp", False)
            if not isinstance(exp, bool):
                return None
            return KnownModel(data["mode"], sigmoid, data["own_match"], exp)
        except (ValueError, TypeError, KeyError):
            return None

    @staticmethod
    def of(scorer: Scorer, mode: ScoringMode) -> KnownModel:
        """What to remember of a built scorer."""
        calibration = getattr(scorer, "sigmoid_calibration", None)
        if calibration is not None:
            return KnownModel(mode, (float(calibration[0]), float(calibration[1])))
        exp = getattr(scorer, "match_is_exp", False) is True
        return KnownModel(mode, None, hasattr(scorer, "match_probability"), exp)


@dataclass
class _Built:
    """The scorer once built (or given), the scoring path chosen for it, or why it failed."""

    scorer: Scorer | None = None
    mode: ScoringMode | None = None
    error: Exception | None = None
    fingerprint: str | None = None
    """The scorer's fingerprint as read at the start of the user's call (``pin_fingerprint``)."""


@dataclass
class _Naming:
    """What names the model's cache namespace, worked out once."""

    identity: ModelIdentity | None = None
    identified: bool = False
    precision: str | None = None
    """The precision the model computes in (fp16 on the CPU is fp32): part of the namespace."""
    known: KnownModel | None = None
    """What the cache remembered of the model (read with the namespace)."""


@dataclass
class ScorerSource:
    """One model's scorer, built on first need (``built``: one already built, ``given``: one
    built by the caller), and its identity. ``cache`` is the embedding cache whose namespaces
    it names (None: none)."""

    spec: ModelSpec
    options: ModelOptions
    cache: EmbeddingCache | None = None
    given: InitVar[Scorer | None] = None
    _built: _Built = field(init=False, repr=False)
    _name: _Naming = field(init=False, repr=False, default_factory=_Naming)

    def __post_init__(self, given: Scorer | None) -> None:
        self._built = _Built(given)

    @property
    def built(self) -> bool:
        """Whether the scorer exists (a cached re-run may never build it)."""
        return self._built.scorer is not None

    @property
    def scorer(self) -> Scorer:
        """The scorer, loaded once; a load failure is remembered and raised again.

        The scoring path is chosen here, once: reference lookups (no pixels), the dual
        encoder (each unique input encoded once, cosine scores), or the pair scorer.
        """
        built = self._built
        if built.error is not None:
            raise built.error
        if built.scorer is None:
            try:
                built.scorer = self._same_identity(load_scorer(self.spec, self.options))
            except Exception as exc:
                built.error = exc
                raise
        if built.mode is None:
            built.mode = _scoring_mode(built.scorer)
            self.remember_model()
        return built.scorer

    def _same_identity(self, scorer: Scorer) -> Scorer:
        """``scorer``, if it is the model the cache namespace was named after before it was
        built: otherwise vectors of two weights would be mixed under one name (a hub model
        updated while loading, a ``py:`` factory declaring another fingerprint)."""
        identity = self._name.identity if self._name.identified else None
        built = scorer_fingerprint(scorer)
        if identity is not None and built and built != identity.fingerprint:
            raise ModelLoadError(
                f"model '{self.spec.text}': its fingerprint was {identity.fingerprint} before "
                f"loading and the loaded model's is {built}; expected one fingerprint (a "
                "py: factory's vlcheck_fingerprint must equal its scorer's fingerprint; hub "
                "weights updated while loading are read again by a new run)"
            )
        return scorer

    @property
    def mode(self) -> ScoringMode:
        """How this model scores: from the cache's memory of it, else by building it."""
        built = self._built
        if built.mode is None:
            known = self.known_model()
            built.mode = known.mode if known is not None else None
        if built.mode is None:
            _ = self.scorer
        assert built.mode is not None
        return built.mode

    @property
    def fingerprint(self) -> str:
        """The weights' fingerprint: the identity's when known (no model needed)."""
        identity = self._name.identity if self._name.identified else None
        return identity.fingerprint if identity else self._scorer_fingerprint()

    def pin_fingerprint(self) -> str:
        """Read the built scorer's fingerprint for the rest of the user's call (weights hold
        still during one): a live model's weights are checksummed once per call, not once
        per test and per cache lookup (20 tests: 0.5 s of a 224-px call on this machine)."""
        self._built.fingerprint = scorer_fingerprint(self.scorer)
        return self._built.fingerprint

    def _scorer_fingerprint(self) -> str:
        pinned = self._built.fingerprint
        return pinned if pinned is not None else scorer_fingerprint(self.scorer)

    def require_dual(self, method: str) -> None:
        if self.mode != "dual":
            raise ScorerProtocolError(
                f"{self.not_dual()}: {method} needs a dual encoder (encode_images and "
                "encode_texts); use score(images, texts) instead"
            )

    def not_dual(self) -> str:
        """Why this model gives no embeddings: ``model 'SPEC' looks scores up``."""
        kind = "scores pairs only (score_pairs)" if self.mode == "pairs" else "looks scores up"
        return f"model '{self.spec.text}' {kind}"

    def match_scores(self, scores: np.ndarray) -> tuple[np.ndarray, str]:
        """Scores for a ``match`` decision and their kind (``probability`` or ``similarity``).

        Dual encoders that define ``match_probability`` (SigLIP's sigmoid) map similarities
        to probabilities, as do pair scorers that define one (a generative model's mean
        log-probability -> exp); other cross-encoders and score files give their scores as
        they are.
        """
        if self.mode == "refs":
            return scores, "probability"
        known = self._name.known if self._built.scorer is None else None
        if known is not None and known.sigmoid is not None:
            return calibrated_sigmoid(scores, *known.sigmoid), "probability"
        if known is not None and known.exp:
            return np.exp(scores.astype(np.float64)).astype(np.float32), "probability"
        own = getattr(self.scorer, "match_probability", None) if self._own_match() else None
        if own is not None:
            return np.asarray(own(scores), dtype=np.float32), "probability"
        return scores, "probability" if self.mode == "pairs" else "similarity"

    @property
    def score_kind(self) -> str:
        """What the model's raw scores are: ``similarity`` (a dual encoder's cosine),
        ``log-probability`` (a generative model's mean answer log-probability: VQAScore,
        ``match_is_exp``), ``score`` (another pair scorer's or a scores file's own scale)."""
        mode = self.mode
        if mode != "pairs":
            return "similarity" if mode == "dual" else "score"
        known = self._name.known if self._built.scorer is None else None
        exp = known.exp if known is not None else getattr(self.scorer, "match_is_exp", False)
        return "log-probability" if exp is True else "score"

    def _own_match(self) -> bool:
        """Whether the scorer maps its scores to match probabilities itself."""
        known = self._name.known if self._built.scorer is None else None
        return (known is None or known.own_match) and hasattr(self.scorer, "match_probability")

    def namespace(self, kind: str) -> str | None:
        """The cache namespace of ``kind`` for this model, or None when it cannot be cached:
        no cache, or a model without an identity that is not built yet."""
        if self.cache is None or not self.cache.enabled:
            return None
        name = self._name
        if not name.identified:
            name.identified = True
            name.identity = identify(self.spec, self.options, self.cache.file_digest)
        identity = name.identity
        if identity is None and self._built.scorer is not None:
            fingerprint = self._scorer_fingerprint()
            # Without a backend identity, the spec as written stands for the preprocessing.
            identity = ModelIdentity(fingerprint, f"spec {self.spec.text}") if fingerprint else None
        if identity is None:
            return None
        if name.precision is None:
            name.precision = run_precision(self.spec.scheme, self.options)
        preprocessing = f"{identity.preprocessing}|{name.precision}"
        if self.options.decode != "cpu":  # the default adds nothing: existing caches still hit
            preprocessing += f"|decode={self.options.decode}"
        return namespace(identity.fingerprint, preprocessing, kind)

    def stored(self, kind: str, items: dict[str, np.ndarray]) -> None:
        """Put ``kind`` vectors in the cache under this model's namespace (when it has one)."""
        space = self.namespace(kind)
        if space is not None and self.cache is not None:
            self.cache.put_many(space, items)

    def cached(self, kind: str, keys: list[str]) -> dict[str, np.ndarray]:
        """The ``kind`` vectors the cache holds for ``keys`` under this model's namespace."""
        space = self.namespace(kind) if keys else None
        if space is None or self.cache is None:
            return {}
        return self.cache.get_many(space, keys)

    def known_model(self) -> KnownModel | None:
        space = self.namespace("meta")
        if space is None or self.cache is None:
            return None
        self._name.known = KnownModel.from_json(self.cache.get_meta(space))
        return self._name.known

    def remember_model(self) -> None:
        space = self.namespace("meta")
        built = self._built
        if space is None or self.cache is None or built.scorer is None:
            return
        if built.mode == "dual" or built.mode == "pairs":
            self.cache.put_meta(space, KnownModel.of(built.scorer, built.mode).to_json())

    def call(self, method: str, expected: int, *args: Any) -> np.ndarray:
        """Call a scorer method and check its result against the protocol: ``expected``
        rows of numbers (numpy, torch on any device, or lists), as float32 numpy."""
        function = getattr(self.scorer, method, None)
        if function is None:  # a scorer that only answers (the generative methods)
            raise ScorerProtocolError(
                f"model '{self.spec.text}' has no {method}: it only answers prompts (a "
                "generative scorer); expected a choice, answer or match (decide: yes_vs_no) "
                "test, or a scorer with score_pairs or encode_images + encode_texts"
            )
        raw = self.user_code(method, function, *args)
        try:
            result = _to_numpy(raw)
        except (TypeError, ValueError) as exc:
            raise ScorerProtocolError(
                f"model '{self.spec.text}': {method} returned {type(raw).__name__}, not "
                f"numbers ({exc}); expected a numpy array, torch tensor or list of numbers"
            ) from None
        check_rows(result, expected, method, self.spec.text)
        return result

    def user_code(self, method: str, function: Callable[..., Any], *args: Any) -> Any:
        """Call a scorer method. An exception from the user's own scorer (``py:`` or an entry
        point) becomes a ``UserCodeError`` with their frames only; one from a built-in
        backend is a bug in vlcheck and keeps its full traceback."""
        try:
            return function(*args)
        except VlcheckUserError:
            raise
        except Exception as exc:
            if self.spec.scheme in BUILTIN_BACKENDS:
                raise
            raise UserCodeError.from_exception(exc, self._calling(function, method, exc)) from exc

    def _calling(self, function: Callable[..., Any], method: str, exc: Exception) -> str:
        """What raised, for the message: the model by its spec (a model object by its
        ``name=``), the user's method (a live model's wrapper method is the tool's: its
        forward pass), and the user's line that raised."""
        shown = self.spec.text if self.spec.scheme else self.spec.name
        owner = type(getattr(function, "__self__", None)).__module__
        if owner.startswith("pytest_vlcheck."):  # a live model wrapped by the tool
            method = f"its forward pass on {'texts' if 'text' in method else 'images'}"
        where = user_frame(exc)
        return f"model '{shown}': {method}" + (f" at {where}" if where else "")


def _scoring_mode(scorer: Scorer) -> ScoringMode:
    """Reference lookups when the scorer has them, else the dual encoder, else pairs."""
    if isinstance(scorer, RefScorer):
        return "refs"
    return "dual" if isinstance(scorer, DualEncoder) else "pairs"


def _to_numpy(value: Any) -> np.ndarray:
    """Arrays from numpy, torch (any device) or lists, as float32 numpy."""
    if hasattr(value, "detach"):
        value = value.detach().float().cpu().numpy()
    return np.asarray(value, dtype=np.float32)
