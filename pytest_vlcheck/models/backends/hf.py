"""The ``hf:NAME_OR_DIR`` backend: a transformers image-text model behind the scorer protocol.

Three shapes of model are served:

- CLIP family (anything with ``get_image_features`` / ``get_text_features``): a dual
  encoder; texts padded to the longest in the batch, truncated at the model's context.
- SigLIP family (a dual encoder whose model has ``logit_bias``): texts padded to the
  model's full context (its text tower pools the last position, so this is how it was
  trained), no attention mask (the original attends to padding), and ``match_probability``
  = sigmoid(exp(logit_scale) * cosine + logit_bias).
- BLIP image-text matching (``*ForImageTextRetrieval`` checkpoints): a cross-encoder whose
  ``score_pairs`` is the ITM head's softmax probability of "match".

Embeddings are returned raw (not L2-normalised) as fp32; the engine normalises them. Texts
longer than the context are truncated with one ``TruncationWarning`` per text. Image
processors load with the PIL backend (``backend="pil"``), which reproduces the preprocessing
the checkpoints were evaluated with. A checkpoint that leaves any model weight uninitialised
is refused: scores from random weights would look like results. Remote code is never run.

transformers and torch are imported inside ``load()`` and the scorers' methods only.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import (
    ModelFileNotFoundError,
    ModelLoadError,
    VlcheckUserError,
    WeightsUnavailableError,
)
from pytest_vlcheck.models.batching import (
    EmbeddingOutputs,
    ForwardContext,
    TruncationLog,
    calibrated_sigmoid,
    device_batch_size,
    run_in_batches,
    short_detail,
    sigmoid_calibration_of,
    to_float32_numpy,
)
from pytest_vlcheck.models.devices import (
    effective_precision,
    inference_context,
    resolve_device,
    torch_dtype,
)
from pytest_vlcheck.models.hashing import fingerprint_path
from pytest_vlcheck.models.hub import hub_cache_dir, hub_unreachable_reason
from pytest_vlcheck.models.protocol import Digest, ModelIdentity
from pytest_vlcheck.models.spec_files import missing_folder

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.models.protocol import ModelOptions

_UNBOUNDED = 10**6  # tokenizers without a limit report a huge model_max_length


class _HfModel(EmbeddingOutputs):
    """What every transformers scorer holds: model, tokenizer, image processor, run settings."""

    def __init__(
        self,
        *,
        name: str,
        fingerprint: str,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        device: str,
        dtype: Any,
        batch_size: int,
        forward_context: ForwardContext | None = None,
    ) -> None:
        self.name = name
        self.fingerprint = fingerprint
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.max_length = text_limit(model, tokenizer)
        self.truncation = TruncationLog(name)
        self.forward_context = forward_context or inference_context

    def _pixels(self, images: list[Image], accepted: set[str]) -> dict[str, Any]:
        features = self.image_processor(images=list(images), return_tensors="pt")
        return {key: self._on_device(value) for key, value in features.items() if key in accepted}

    def _on_device(self, tensor: Any) -> Any:
        """``tensor`` on the model's device, in the model's dtype when it is floating point."""
        tensor = tensor.to(self.device)
        return tensor.to(self.dtype) if tensor.is_floating_point() else tensor

    def _tokens(self, texts: list[str], *, pad_to_max: bool) -> dict[str, Any]:
        self._check_truncation(texts)
        encoded = self.tokenizer(
            list(texts),
            padding="max_length" if pad_to_max else True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {key: value.to(self.device) for key, value in encoded.items()}

    def _check_truncation(self, texts: list[str]) -> None:
        rows = self.tokenizer(list(texts), truncation=False, padding=False, verbose=False)
        for text, ids in zip(texts, rows["input_ids"], strict=True):
            if len(ids) > self.max_length:
                self.truncation.report(text, len(ids), self.max_length)


class HfDualScorer(_HfModel):
    """A CLIP-family dual encoder."""

    pad_to_max = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._image_names = _named_parameters(self.model.get_image_features)
        self._text_names = self._text_input_names()

    def _text_input_names(self) -> set[str]:
        return _named_parameters(self.model.get_text_features)

    def encode_images(self, images: list[Image]) -> np.ndarray:
        """Raw fp32 image embeddings [N, D]."""
        return self.encode_preprocessed([self.preprocess_image(image) for image in images])

    def preprocess_image(self, image: Image) -> dict[str, Any]:
        """The image processor's CPU tensors for one image (thread-safe: the engine runs it
        in its loader pool, overlapping the model). CLIP-family processors resize every
        image to one size, so one image's tensors equal its row of a batch's."""
        features = self.image_processor(images=[image], return_tensors="pt")
        return {key: value[0] for key, value in features.items() if key in self._image_names}

    def encode_preprocessed(self, pixels: list[dict[str, Any]]) -> np.ndarray:
        """Raw fp32 embeddings [N, D] of images already through ``preprocess_image``."""
        import torch

        if not pixels:
            return self._empty()

        def forward(batch: Sequence[dict[str, Any]]) -> np.ndarray:
            stacked = {key: torch.stack([p[key] for p in batch]) for key in batch[0]}
            inputs = {key: self._on_device(value) for key, value in stacked.items()}
            return to_float32_numpy(_features(self.model.get_image_features(**inputs)))

        with self.forward_context():
            return run_in_batches(pixels, self, forward)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Raw fp32 text embeddings [M, D]; over-long texts are truncated with a warning."""
        if not texts:
            return self._empty()

        def forward(batch: Sequence[str]) -> Any:
            """The device tensor: fetched after the next batch is tokenised and launched."""
            tokens = self._tokens(list(batch), pad_to_max=self.pad_to_max)
            inputs = {k: v for k, v in tokens.items() if k in self._text_names}
            return _features(self.model.get_text_features(**inputs))

        with self.forward_context():
            return run_in_batches(texts, self, forward)


class HfSigmoidScorer(HfDualScorer):
    """A SigLIP-family dual encoder with its calibrated pair probability."""

    pad_to_max = True

    def __init__(self, *, logit_scale: float, logit_bias: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.logit_scale = logit_scale  # already exponentiated
        self.logit_bias = logit_bias

    def _text_input_names(self) -> set[str]:
        # SigLIP was trained attending to its padding; an attention mask changes the output.
        return {"input_ids"}

    def match_probability(self, similarities: np.ndarray) -> np.ndarray:
        """sigmoid(exp(logit_scale) * cosine + logit_bias), elementwise, as fp32."""
        return calibrated_sigmoid(similarities, self.logit_scale, self.logit_bias)

    @property
    def sigmoid_calibration(self) -> tuple[float, float]:
        """(scale, bias) of ``match_probability``, for cached similarities."""
        return self.logit_scale, self.logit_bias


class HfItmScorer(_HfModel):
    """A BLIP image-text matching head: one probability per (image, text) pair."""

    def score_pairs(self, images: list[Image], texts: list[str]) -> np.ndarray:
        """P(match) for each (images[i], texts[i]), from the ITM head's two-way softmax."""
        import numpy as np
        import torch

        if len(images) != len(texts):
            raise ValueError(f"score_pairs got {len(images)} images but {len(texts)} texts")
        if not images:
            return np.zeros((0,), dtype=np.float32)

        def forward(batch: Sequence[tuple[Image, str]]) -> np.ndarray:
            pixels = self._pixels([image for image, _ in batch], {"pixel_values"})
            tokens = self._tokens([text for _, text in batch], pad_to_max=False)
            output = self.model(
                input_ids=tokens["input_ids"],
                attention_mask=tokens.get("attention_mask"),
                pixel_values=pixels["pixel_values"],
                use_itm_head=True,
            )
            logits = output.itm_score.float()
            return to_float32_numpy(torch.softmax(logits, dim=-1)[:, 1])

        with self.forward_context():
            return run_in_batches(list(zip(images, texts, strict=True)), self, forward)


def check_files(body: str) -> str | None:
    """The local folders the spec names (``spec_files``): the model's and its ``#BASE``
    (which may hold only a processor, ``save_pretrained`` of a processor)."""
    model, _, base = body.partition("#")
    for part, what in ((model.strip(), "model directory"), (base.strip(), "#BASE directory")):
        if problem := missing_folder(part, what):
            return problem
    return None


def load(body: str, options: ModelOptions) -> HfDualScorer | HfItmScorer:
    """Load ``hf:BODY`` (a hub name or a ``save_pretrained`` directory), in eval mode;
    ``hf:DIR#BASE`` takes the tokenizer and image processor from BASE (a Trainer's
    ``checkpoint-N`` folder holds the model only)."""
    spec = f"hf:{body}"
    model_body, processor_body = split_processor(body)
    where = HubLocation.of(model_body, spec)
    source, local = where.source, where.local
    import transformers

    device = resolve_device(options.device)
    dtype = torch_dtype(effective_precision(options.precision, device))
    config = where.config(transformers)
    _refuse_generative(spec, body, config)
    architectures = list(getattr(config, "architectures", None) or [])
    itm_name = next((a for a in architectures if a.endswith("ForImageTextRetrieval")), None)
    model_class = getattr(transformers, itm_name, None) if itm_name else transformers.AutoModel
    if model_class is None:
        raise ModelLoadError(
            f"{spec}: this transformers version ({transformers.__version__}) has no class "
            f"{itm_name}; expected a transformers release that has it"
        )
    model = where.model(transformers, model_class, dtype)
    dual = hasattr(model, "get_image_features") and hasattr(model, "get_text_features")
    if not (itm_name or dual):
        raise ModelLoadError(
            f"{spec}: {type(model).__name__} is not an image-text model this backend can "
            "score: it needs get_image_features/get_text_features (CLIP family, SigLIP) or "
            "an image-text matching head (BLIP *ForImageTextRetrieval)"
        )
    tokenizer, image_processor = _processors(transformers, spec, source, local, processor_body)
    model.to(device)
    model.eval()

    common: dict[str, Any] = {
        "name": spec,
        "fingerprint": _fingerprint(model_body, source, local) + _processor_part(processor_body),
        "model": model,
        "tokenizer": tokenizer,
        "image_processor": image_processor,
        "device": device,
        "dtype": dtype,
        "batch_size": device_batch_size(options, device),
    }
    if itm_name:
        return HfItmScorer(**common)
    calibration = sigmoid_calibration_of(model)
    if calibration is None:
        return HfDualScorer(**common)
    scale, bias = calibration
    return HfSigmoidScorer(logit_scale=scale, logit_bias=bias, **common)


def refuse_missing_weights(spec: str, model: Any, info: dict[str, Any]) -> None:
    """A checkpoint that leaves parameters of ``model`` uninitialised is refused: scores from
    random weights would look like results."""
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ModelLoadError(
            f"{spec}: the checkpoint has no weights for {len(missing)} parameter(s) of "
            f"{type(model).__name__} ({shown}); they would be random, so the model is refused"
        )


def _refuse_generative(spec: str, body: str, config: Any) -> None:
    """A generative VLM (LLaVA, Qwen2-VL, ...) is scored by the ``vqa:`` backend."""
    from pytest_vlcheck.models.backends.generative_classes import is_generative_class

    generative = [a for a in getattr(config, "architectures", None) or [] if is_generative_class(a)]
    if generative:
        raise ModelLoadError(
            f"{spec}: a {generative[0]} is a generative image-text-to-text model, which hf: "
            f"cannot score; expected vqa:{body} (VQAScore: the probability it answers Yes)"
        )


def _dtype_kwargs(transformers: Any, dtype: Any) -> dict[str, Any]:
    """``dtype=`` since transformers 4.56; ``torch_dtype=`` before."""
    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


def _pil_processor_kwargs() -> dict[str, Any]:
    """Ask for the PIL image processor: ``backend="pil"`` since the 5.x backend refactor
    (which added ``transformers.image_processing_backends``), ``use_fast=False`` before."""
    import importlib.util

    if importlib.util.find_spec("transformers.image_processing_backends") is not None:
        return {"backend": "pil"}
    return {"use_fast": False}


def text_limit(model: Any, tokenizer: Any) -> int:
    """The longest token sequence the text tower takes: its position table, or the tokenizer's."""
    config = getattr(model, "config", None)
    text_config = getattr(config, "text_config", None) or config
    limits = [getattr(text_config, "max_position_embeddings", None)]
    limits.append(getattr(tokenizer, "model_max_length", None))
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < _UNBOUNDED]
    if not usable:
        raise ValueError("cannot tell the text context length of this model")
    return min(usable)


def split_processor(body: str) -> tuple[str, str | None]:
    """``DIR#BASE`` -> (``DIR``, ``BASE``): the model, and where its tokenizer and image
    processor come from (None: the model's own source). ``#`` is no glob character, so a
    checkpoint glob keeps it: ``hf:out/checkpoint-*#openai/clip-vit-base-patch32``."""
    model, sep, processor = body.partition("#")
    if sep and not processor.strip():
        raise ModelLoadError(
            f"hf:{body}: nothing after '#'; expected where the tokenizer and image processor "
            "come from: hf:DIR#HUB_NAME or hf:DIR#BASE_DIR"
        )
    return model, (processor.strip() if sep else None)


def _processors(
    transformers: Any, spec: str, source: str, local: bool, processor_body: str | None
) -> tuple[Any, Any]:
    """The tokenizer and PIL image processor, from the model's source or from ``#BASE``."""
    if processor_body is not None:
        source, local = _resolve_source(processor_body, spec, PROCESSOR_FILES)
    offline = None if local else hub_unreachable_reason()
    kwargs: dict[str, Any] = {"local_files_only": True} if local or offline else {}
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
        image_processor = transformers.AutoImageProcessor.from_pretrained(
            source, **_pil_processor_kwargs(), **kwargs
        )
    except Exception as exc:
        if local and processor_body is None:
            raise ModelLoadError(
                f"{spec}: {source} has no tokenizer or image processor ({short_detail(exc)}); "
                "a Trainer's checkpoint-N folder saves the model only: name where they come "
                f"from after '#', e.g. {spec}#openai/clip-vit-base-patch32 or {spec}#BASE_DIR"
            ) from exc
        raise _fetch_error(spec, local, offline, "its tokenizer or image processor", exc) from exc
    return tokenizer, image_processor


def _processor_part(processor_body: str | None) -> str:
    """What ``#BASE`` adds to the fingerprint: the base's own (its tokenizer files count)."""
    if processor_body is None:
        return ""
    source, local = _resolve_source(processor_body, f"hf:#{processor_body}", PROCESSOR_FILES)
    return "#" + _fingerprint(processor_body, source, local)


PROCESSOR_FILES = (
    "config.json",
    "processor_config.json",
    "preprocessor_config.json",
    "tokenizer_config.json",
)
"""What marks a ``#BASE`` folder: a model's, or a processor's ``save_pretrained`` output
(which writes no ``config.json``)."""


@dataclass(frozen=True)
class HubLocation:
    """Where a transformers model is read from (a ``save_pretrained`` folder or a hub name)
    and whether the hub answers: worked out before transformers is imported, so a hub model
    that is neither reachable nor cached fails at once, not after retries."""

    spec: str
    source: str
    local: bool
    offline: str | None
    """Why the hub cannot be reached (None: it can, or the model is a local folder)."""

    @classmethod
    def of(cls, body: str, spec: str) -> HubLocation:
        source, local = _resolve_source(body, spec)
        offline = None if local else hub_unreachable_reason()
        if offline is not None and _cached_config(source) is None:
            raise _not_cached_error(spec, offline, "its config")
        return cls(spec, source, local, offline)

    @property
    def kwargs(self) -> dict[str, Any]:
        """``from_pretrained``'s keywords: local files only for a folder or an offline hub."""
        return {"local_files_only": True} if self.local or self.offline else {}

    def error(self, what: str, exc: Exception) -> ModelLoadError:
        """The one line for ``what`` (its config, the model, its processor) failing to load."""
        return _fetch_error(self.spec, self.local, self.offline, what, exc)

    def config(self, transformers: Any) -> Any:
        try:
            return transformers.AutoConfig.from_pretrained(self.source, **self.kwargs)
        except Exception as exc:  # OSError offline, ValueError for an unknown model type
            raise self.error("its config", exc) from exc

    def model(self, transformers: Any, model_class: Any, dtype: Any) -> Any:
        """The model in ``dtype``, refused when the files lack some of its weights."""
        try:
            model, info = model_class.from_pretrained(
                self.source,
                output_loading_info=True,
                **_dtype_kwargs(transformers, dtype),
                **self.kwargs,
            )
        except Exception as exc:
            raise self.error("the model", exc) from exc
        refuse_missing_weights(self.spec, model, info)
        return model


def _resolve_source(
    body: str, spec: str, markers: tuple[str, ...] = ("config.json",)
) -> tuple[str, bool]:
    """(what from_pretrained gets, whether it is a local directory); a local directory
    must hold one of ``markers``."""
    text = body.strip()
    if not text:
        raise ModelLoadError(f"{spec}: empty spec; expected hf:HUB_NAME or hf:PATH/TO/DIRECTORY")
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / marker).is_file() for marker in markers):
            raise ModelLoadError(
                f"{spec}: {path} has no {' or '.join(markers)}; expected a directory written "
                "by save_pretrained (model, tokenizer and image processor)"
            )
        return str(path.resolve()), True
    if path.exists():
        raise ModelLoadError(f"{spec}: {path} is a file; expected a model directory or a hub name")
    looks_local = text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1
    if looks_local or (os.sep != "/" and os.sep in text):
        raise ModelFileNotFoundError(
            f"{spec}: model directory not found: {text}; expected a directory written by "
            "save_pretrained, or a hub name ORG/NAME"
        )
    return text, False


def identify(body: str, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The fingerprint ``load`` would give, without transformers or torch: a local directory,
    or a hub name whose files are in the local hub cache (else None)."""
    try:
        model_body, processor_body = split_processor(body)
        source, local = _resolve_source(model_body, f"hf:{body}")
        extra = _processor_part(processor_body)
    except VlcheckUserError:
        return None
    if extra == f"#hf:{processor_body}":
        return None  # a hub processor not in the local cache: nothing names its revision
    preprocessing = f"transformers {metadata.version('transformers')}"
    if local:
        return ModelIdentity(fingerprint_path(source, digest) + extra, preprocessing)
    fingerprint = _fingerprint(model_body, source, local)
    if fingerprint == f"hf:{model_body}":
        return None
    return ModelIdentity(fingerprint + extra, preprocessing)


def _fetch_error(
    spec: str, local: bool, offline: str | None, what: str, exc: Exception
) -> ModelLoadError:
    detail = short_detail(exc)
    if not local and offline is not None:
        return _not_cached_error(spec, offline, what)
    if not local and isinstance(exc, OSError):
        return WeightsUnavailableError(
            f"{spec}: could not fetch {what} from the Hugging Face Hub: {detail}; expected "
            "an existing hub name ORG/NAME, or a local directory: hf:/path/to/dir"
        )
    return ModelLoadError(f"{spec}: could not load {what}: {detail}")


def _not_cached_error(spec: str, offline: str, what: str) -> WeightsUnavailableError:
    return WeightsUnavailableError(
        f"{spec}: could not fetch {what}: it is not in the local cache (looked in "
        f"{hub_cache_dir()}) and {offline}; download it where the network is reachable, "
        "or point at a local directory: hf:/path/to/dir (written by save_pretrained)"
    )


def _fingerprint(body: str, source: str, local: bool) -> str:
    """sha256 over the directory's weight/config files, or the hub name and cached revision."""
    if local:
        return fingerprint_path(source)
    cached = _cached_config(source)
    if cached is None:
        return f"hf:{body}"
    revision = Path(cached).parent.name  # .../snapshots/<commit>/config.json
    return f"hf:{body}@{revision}"


def _cached_config(repo: str) -> str | None:
    """The hub repo's config.json in the local cache, found without the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    cached = try_to_load_from_cache(repo, "config.json")
    return cached if isinstance(cached, str) else None


def _named_parameters(function: Any) -> set[str]:
    """The explicitly named parameters of a forward-like method (not its **kwargs)."""
    return {
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
    }


def _features(output: Any) -> Any:
    """transformers 5 returns an output object from get_*_features; the embedding is pooled."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    pooled = getattr(output, "pooler_output", None)
    if pooled is None:
        raise ValueError(f"model returned {type(output).__name__} without a pooled embedding")
    return pooled
