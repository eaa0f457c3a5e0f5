"""Score a model while it trains: ``live_scorer`` wraps the caller's model object.

``pytest_vlcheck.evaluate(model, checklists, preprocess=..., tokenizer=...)`` is called
from a training loop every N steps. The model is the caller's: it is never moved, cast or
left changed (``live_guard``), and since its weights change between calls its fingerprint
is recomputed from them at each access (``live_fingerprint``), so scores kept for one step
are never served for the next. Encoding itself is the spec backends' code
(``open_clip_backend.OpenClipScorer``, ``hf_backend.HfDualScorer``), entered with the live
guard instead of ``inference_mode``.

torch, open_clip and transformers are imported inside the functions only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_vlcheck import fmt
from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.batching import calibrated_sigmoid, sigmoid_calibration_of
from pytest_vlcheck.models.live.identity import live_fingerprint, live_identity
from pytest_vlcheck.models.live.placement import place
from pytest_vlcheck.models.live.token_memo import token_memo
from pytest_vlcheck.models.protocol import (
    DualEncoder,
    ModelOptions,
    PairScorer,
    RefScorer,
)

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.models.backends.hf import HfDualScorer
    from pytest_vlcheck.models.backends.open_clip import OpenClipScorer

"""Live fingerprints start with it; spec fingerprints are sha256 hex or ``hf:NAME[@REV]``."""

_EXPECTED = (
    "expected an open_clip model (CLIP, CustomTextCLIP, CoCa) with preprocess= and "
    "tokenizer= from open_clip.create_model_and_transforms / get_tokenizer, a transformers "
    "CLIP-family or SigLIP model with preprocess=its processor, a transformers "
    "image-text-to-text model (LLaVA, Qwen2-VL, PaliGemma) with preprocess=its processor, or "
    "a scorer object "
    "(encode_images + encode_texts, score_pairs or score_refs)"
)


class LiveScorer:
    """A caller's model behind the scorer protocol, fingerprinted from its current weights."""

    def __init__(self, encoder: OpenClipScorer | HfDualScorer, model: Any, identity: str) -> None:
        self.encoder = encoder  # entered with the live guard
        self.model = model
        self.identity = identity  # architecture class, preprocessing, precision

    @property
    def name(self) -> str:
        """``live:<model class>``."""
        return str(self.encoder.name)

    @property
    def fingerprint(self) -> str:
        """``live:`` + sha256 of the identity, the model's repr and the keyed checksum of its
        current weights and buffers: it changes with every change to them."""
        return live_fingerprint(self.identity, self.model)

    @property
    def truncated_texts(self) -> set[str]:
        """Texts that were longer than the context and were cut."""
        return set(self.encoder.truncated_texts)

    @property
    def device(self) -> str:
        """Where the model computes (the engine prepares images beside an accelerator, and
        before each batch on the CPU)."""
        return str(self.encoder.device)

    def preprocess_image(self, image: Image) -> Any:
        """The caller's eval preprocessing of one image (thread-safe; no model involved)."""
        return self.encoder.preprocess_image(image)

    def encode_preprocessed(self, pixels: list[Any]) -> np.ndarray:
        """Raw fp32 embeddings [N, D] of images already through ``preprocess_image``."""
        return self.encoder.encode_preprocessed(pixels)

    def encode_images(self, images: list[Image]) -> np.ndarray:
        """Raw fp32 image embeddings [N, D]."""
        return self.encoder.encode_images(images)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Raw fp32 text embeddings [M, D]; over-long texts are truncated with a warning."""
        return self.encoder.encode_texts(texts)


class LiveSigmoidScorer(LiveScorer):
    """A SigLIP-style live model: its calibration is read from the model at each use."""

    @property
    def sigmoid_calibration(self) -> tuple[float, float]:
        """(exp(logit_scale), logit_bias) as the model holds them now."""
        calibration = sigmoid_calibration_of(self.model)
        if calibration is None:  # the caller removed logit_bias after wrapping
            raise VlcheckUserError(
                f"{self.name}: the model no longer has a logit_bias; expected the "
                "SigLIP-style model it was wrapped with"
            )
        return calibration

    def match_probability(self, similarities: np.ndarray) -> np.ndarray:
        """sigmoid(exp(logit_scale) * cosine + logit_bias), with the current parameters."""
        return calibrated_sigmoid(similarities, *self.sigmoid_calibration)


def live_scorer(
    model: Any, *, preprocess: Any = None, tokenizer: Any = None, options: ModelOptions
) -> LiveScorer | DualEncoder | PairScorer | RefScorer:
    """A scorer for a model object: an open_clip model with its ``preprocess`` and
    ``tokenizer``, a transformers CLIP-family or SigLIP model with ``preprocess=processor``,
    or an object already implementing the scorer protocol (returned as is)."""
    if isinstance(model, (RefScorer, DualEncoder, PairScorer)):
        if preprocess is not None or tokenizer is not None:
            raise VlcheckUserError(
                f"model: {fmt.with_article(type(model).__name__)} is already a scorer, so it "
                "takes no preprocess= or tokenizer=; expected them only with a torch model"
            )
        return model
    kind = _model_kind(model)
    if kind == "open_clip":
        return _open_clip_scorer(model, preprocess, tokenizer, options)
    if kind == "transformers":
        return _transformers_scorer(model, preprocess, tokenizer, options)
    if kind == "generative":
        from pytest_vlcheck.models.live.vqa import live_vqa_scorer

        return live_vqa_scorer(model, preprocess, tokenizer, options)
    inner = getattr(model, "module", None)  # DistributedDataParallel, DataParallel
    hint = " (it wraps one: pass its .module)" if _model_kind(inner) else ""
    raise VlcheckUserError(
        f"model: {fmt.with_article(type(model).__name__)} object cannot be scored{hint}; "
        f"{_EXPECTED}"
    )


def _model_kind(model: Any) -> str | None:
    """open_clip (encode_image/encode_text), transformers (get_*_features), generative (a
    transformers image-text-to-text class) or neither."""
    try:
        import torch
    except ImportError:
        return None
    if not isinstance(model, torch.nn.Module):
        return None
    if callable(getattr(model, "encode_image", None)) and callable(
        getattr(model, "encode_text", None)
    ):
        return "open_clip"
    if type(model).__module__.startswith("transformers."):
        from pytest_vlcheck.models.backends.generative_classes import is_generative_class

        if is_generative_class(type(model).__name__):
            return "generative"
    if callable(getattr(model, "get_image_features", None)) and callable(
        getattr(model, "get_text_features", None)
    ):
        return "transformers"
    return None


def _open_clip_scorer(
    model: Any, preprocess: Any, tokenizer: Any, options: ModelOptions
) -> LiveScorer:
    from pytest_vlcheck.models.backends.open_clip import OpenClipScorer

    given = {"preprocess": preprocess, "tokenizer": tokenizer}
    missing = [name for name, value in given.items() if not callable(value)]
    if missing:
        raise VlcheckUserError(
            f"model: an open_clip {type(model).__name__} needs preprocess= and tokenizer= "
            f"(missing or not callable: {', '.join(missing)}); expected the eval "
            "transform from open_clip.create_model_and_transforms and "
            "open_clip.get_tokenizer(ARCH)"
        )
    placement = place(model, options)
    encoder = OpenClipScorer(
        **placement.encoder(f"live:{type(model).__name__}"),
        preprocess=preprocess,
        tokenizer=tokenizer,
        input_dtype=placement.dtype,
        token_memo=token_memo(tokenizer),
    )
    identity = live_identity(model, placement.precision, preprocess, tokenizer)
    wrapper = LiveScorer if sigmoid_calibration_of(model) is None else LiveSigmoidScorer
    return wrapper(encoder, model, identity)


def _transformers_scorer(
    model: Any, preprocess: Any, tokenizer: Any, options: ModelOptions
) -> LiveScorer:
    from pytest_vlcheck.models.backends.hf import HfDualScorer, HfSigmoidScorer

    image_processor = getattr(preprocess, "image_processor", preprocess)
    tokenizer = tokenizer if tokenizer is not None else getattr(preprocess, "tokenizer", None)
    # Image processors have .preprocess, tokenizers .model_max_length (torchvision
    # transforms and open_clip tokenizers have neither).
    if not (hasattr(image_processor, "preprocess") and hasattr(tokenizer, "model_max_length")):
        raise VlcheckUserError(
            f"model: a transformers {type(model).__name__} needs preprocess= its processor "
            "(AutoProcessor.from_pretrained(..., backend='pil'), holding the image processor "
            "and the tokenizer); expected preprocess=processor, or preprocess=image_processor "
            "and tokenizer=tokenizer"
        )
    placement = place(model, options)
    calibration = sigmoid_calibration_of(model)
    encoder_class = HfDualScorer if calibration is None else HfSigmoidScorer
    extra: dict[str, float] = {}
    if calibration is not None:  # the live wrapper reads them again at each use
        extra = {"logit_scale": calibration[0], "logit_bias": calibration[1]}
    encoder = encoder_class(
        **placement.encoder(f"live:{type(model).__name__}"),
        tokenizer=tokenizer,
        image_processor=image_processor,
        dtype=placement.dtype,
        **extra,
    )
    config: Any = getattr(model, "config", None)
    config_text = config.to_json_string() if hasattr(config, "to_json_string") else ""
    identity = live_identity(model, placement.precision, image_processor, tokenizer, config_text)
    wrapper = LiveScorer if calibration is None else LiveSigmoidScorer
    return wrapper(encoder, model, identity)
