"""The ``open_clip:ARCH[@PRETRAINED]`` backend: an open_clip dual encoder as a scorer.

ARCH is an open_clip registry name (``ViT-B-32-quickgelu``), a path to an open_clip
model-config JSON, or open_clip's own ``hf-hub:ORG/REPO`` / ``local-dir:PATH`` forms (these
carry their weights, so they take no ``@PRETRAINED``). PRETRAINED is a pretrained tag that
open_clip downloads (``openai``) or a local weights file.

Weights files are never unpickled unsafely: ``.safetensors`` is read by safetensors, and any
other torch checkpoint must load with ``torch.load(weights_only=True)`` before open_clip sees
it (open_clip retries a failed load *without* ``weights_only`` on a TypeError).

Embeddings are returned raw (not L2-normalised) as fp32; the engine normalises them.
Texts longer than the model's context (77 tokens for CLIP) are truncated, as every CLIP
evaluation does, with one ``TruncationWarning`` per text naming it.

open_clip and torch are imported inside ``load()`` and the scorer's methods only; the spec's
hub weights are looked up before that, in open_clip's tag table alone (``open_clip_tags``).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import inspect
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import (
    ModelFileNotFoundError,
    ModelLoadError,
    VlcheckUserError,
    WeightsUnavailableError,
)
from pytest_vlcheck.models.backends.open_clip_tags import pretrained_table
from pytest_vlcheck.models.backends.weight_shapes import open_clip_shape_problem
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
from pytest_vlcheck.models.devices import effective_precision, inference_context, resolve_device
from pytest_vlcheck.models.hashing import fingerprint_path
from pytest_vlcheck.models.hub import hub_cache_dir, hub_offline, hub_unreachable_reason
from pytest_vlcheck.models.pixels.compact import HostBatch, split_transform
from pytest_vlcheck.models.protocol import Digest, ModelIdentity
from pytest_vlcheck.models.spec_files import SpecFilesDisagreeError
from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

    from pytest_vlcheck.models.live.token_memo import TokenMemo
    from pytest_vlcheck.models.protocol import ModelOptions

SCHEMA_PREFIXES = ("hf-hub:", "local-dir:")
SAFE_SUFFIXES = (".safetensors",)
# .npz is big_vision (SigLIP) numpy weights: open_clip reads them with np.load, no pickle.
NUMPY_SUFFIXES = (".npz",)
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt", ".npz")
# open_clip's names for the weights inside a hub repo (safetensors first, as it prefers).
HUB_WEIGHT_NAMES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


@dataclass(frozen=True)
class _Source:
    """Where the architecture and the weights come from, resolved from the spec."""

    model_name: str  # what open_clip.create_model receives
    config_path: Path | None = None  # ARCH given as a model-config JSON
    pretrained: str | None = None  # tag or absolute weights path, as open_clip receives it
    tag: str | None = None
    weights_path: Path | None = None


class OpenClipScorer(EmbeddingOutputs):
    """A loaded open_clip model with its eval preprocessing and tokenizer."""

    def __init__(
        self,
        *,
        name: str,
        fingerprint: str,
        model: Any,
        preprocess: Callable[[Image], Any],
        tokenizer: Any,
        device: str,
        input_dtype: Any,
        batch_size: int,
        forward_context: ForwardContext | None = None,
        token_memo: TokenMemo | None = None,
    ) -> None:
        self.name = name
        self.fingerprint = fingerprint
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.device = device
        self.input_dtype = input_dtype
        self.batch_size = batch_size
        self.context_length = int(
            getattr(tokenizer, "context_length", 0) or getattr(model, "context_length", 77)
        )
        self.truncation = TruncationLog(name)
        self.forward_context = forward_context or inference_context
        self.compact = split_transform(preprocess)
        self.host_batch = HostBatch()
        self.token_memo = token_memo  # a live model's, kept across its calls

    def encode_images(self, images: list[Image]) -> np.ndarray:
        """Raw fp32 image embeddings [N, D] through the model's eval transform."""
        if not images:
            return self._empty()
        return self.encode_preprocessed([self.preprocess_image(image) for image in images])

    def preprocess_image(self, image: Image) -> Any:
        """The model's eval transform of one image (thread-safe: the engine runs it in its
        loader pool, overlapping the model): for open_clip's own transforms its uint8
        pixels before ``ToTensor`` (``compact_pixels``), finished per batch."""
        pixels = None if self.compact is None else self.compact.pixels(image)
        return self.preprocess(image) if pixels is None else pixels

    def encode_preprocessed(self, pixels: list[Any]) -> np.ndarray:
        """Raw fp32 embeddings [N, D] of images already through ``preprocess_image``."""

        if not pixels:
            return self._empty()

        def forward(batch: Sequence[Any]) -> np.ndarray:
            return to_float32_numpy(self.model.encode_image(self._pixel_batch(batch)))

        with self.forward_context():
            return run_in_batches(pixels, self, forward)

    def _pixel_batch(self, batch: Sequence[Any]) -> Any:
        """One model input from ``preprocess_image`` outputs: uint8 pixels finished together
        on the device, tensors (the whole transform's) stacked as they are."""
        import torch

        compact = self.compact
        pixels = [item for item in batch if not _whole(item, torch)]
        if compact is not None and len(pixels) == len(batch):
            return compact.finish(pixels, self.device, self.input_dtype, self.host_batch)
        if compact is not None and pixels:  # mixed: each array finished alone, same numbers
            batch = [
                item if _whole(item, torch) else compact.finish([item], "cpu", torch.float32)[0]
                for item in batch
            ]
        return torch.stack(list(batch)).to(device=self.device, dtype=self.input_dtype)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Raw fp32 text embeddings [M, D]; over-long texts are truncated with a warning."""
        if not texts:
            return self._empty()

        def forward(batch: Sequence[str]) -> Any:
            """The device tensor: fetched after the next batch is tokenised and launched."""
            tokens = self._tokens(list(batch))
            return self.model.encode_text(tokens.to(self.device, non_blocking=True))

        with self.forward_context():
            return run_in_batches(texts, self, forward)

    def _tokens(self, texts: list[str]) -> Any:
        """Token ids [len(texts), context]: those the memo keeps (a live model's), the rest
        tokenised now (a kept text that was cut is reported to this scorer's log once; its
        tokens are counted again only then)."""
        import torch

        memo = self.token_memo
        if memo is None:
            return self._tokenised(texts)
        todo = memo.missing(texts)
        fresh = dict(zip(todo, self._tokenised(todo), strict=True)) if todo else {}
        memo.keep(fresh, self.truncation.texts)
        for text in memo.cut.intersection(texts) - self.truncation.texts:
            self.truncation.report(text, self._count_tokens(text), self.context_length)
        return torch.stack([fresh[t] if t in fresh else memo.rows[t] for t in texts])

    def _tokenised(self, texts: list[str]) -> Any:
        """``texts`` through the tokenizer, their truncation checked."""
        tokens = self.tokenizer([*texts, ""])  # the empty text shows the padding
        self._check_truncation(texts, tokens)
        return tokens[:-1]

    def _check_truncation(self, texts: list[str], tokens: Any) -> None:
        """Warn about texts the tokenizer cut. ``tokens`` holds the texts' tokens at the
        context length and, last, an empty text's. Only a text that fills its last content
        slot can have been cut; those alone are tokenised again at twice the context, where a
        text fits iff everything past the context (or past the last content slot, for
        "clips" mode whose class token sits at the end) is the padding an empty text gets.
        This holds for every open_clip tokenizer."""
        ctx = self.context_length
        clips_mode = getattr(self.tokenizer, "tokenizer_mode", "") == "clips"
        last = ctx - 2 if clips_mode else ctx - 1
        filled = (tokens[:-1, last] != tokens[-1, last]).tolist()
        full = [text for text, fills in zip(texts, filled, strict=True) if fills]
        if not full:
            return
        wide = self.tokenizer([*full, ""], context_length=2 * ctx)
        start, stop = (ctx - 2, 2 * ctx - 1) if clips_mode else (ctx, 2 * ctx)
        empty = wide[-1, start:stop]
        for index, text in enumerate(full):
            if bool((wide[index, start:stop] != empty).any()):
                self.truncation.report(text, self._count_tokens(text), ctx)

    def _count_tokens(self, text: str) -> int | None:
        encode = getattr(self.tokenizer, "encode", None)
        if encode is None:
            return None
        return len(encode(text)) + 2  # start and end of text


class OpenClipSigmoidScorer(OpenClipScorer):
    """A SigLIP-style open_clip model: its pair probability is a calibrated sigmoid."""

    def __init__(self, *, logit_scale: float, logit_bias: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.logit_scale = logit_scale  # already exponentiated
        self.logit_bias = logit_bias

    def match_probability(self, similarities: np.ndarray) -> np.ndarray:
        """sigmoid(exp(logit_scale) * cosine + logit_bias), elementwise, as fp32."""
        return calibrated_sigmoid(similarities, self.logit_scale, self.logit_bias)

    @property
    def sigmoid_calibration(self) -> tuple[float, float]:
        """(scale, bias) of ``match_probability``, so the engine can apply it to cached
        similarities without building the model."""
        return self.logit_scale, self.logit_bias


def check_files(body: str) -> str | None:
    """The local files the spec names (``spec_files``): a ``local-dir:`` folder, a config
    .json, a weights file; a config .json beside a .safetensors file must fit its header."""
    arch, pretrained = split_spec(body, lambda name: Path(name).is_file())
    if arch.startswith("local-dir:"):
        folder = Path(arch[len("local-dir:") :]).expanduser()
        if not folder.is_dir():
            return f"directory not found: {folder}; expected a folder with open_clip_config.json"
    elif arch.endswith(".json") and not Path(arch).expanduser().is_file():
        return (
            f"open_clip model config not found: {arch}; expected an existing model-config "
            ".json or a name from open_clip.list_models()"
        )
    if pretrained is None:
        return None
    if Path(pretrained).expanduser().is_file():
        _check_fit(arch, Path(pretrained).expanduser())
        return None
    if Path(pretrained).suffix in WEIGHT_SUFFIXES or "/" in pretrained or "\\" in pretrained:
        return (
            f"weights file not found: {pretrained}; expected an existing weights file "
            "(.safetensors preferred) or a pretrained tag"
        )
    return None


def _check_fit(arch: str, weights: Path) -> None:
    """A model-config .json beside a .safetensors file: do the header's shapes fit it?"""
    if not arch.endswith(".json") or weights.suffix != ".safetensors":
        return
    problem = open_clip_shape_problem(Path(arch).expanduser(), weights)
    if problem is not None:
        raise SpecFilesDisagreeError(problem)


def identify(body: str, options: ModelOptions, digest: Digest) -> ModelIdentity | None:
    """The fingerprint ``load`` would give, from local files and open_clip's tag table only
    (no torch): a cached pretrained tag, a model-config JSON or registry name with a local
    weights file, or ``local-dir:``. ``hf-hub:`` repos carry their own preprocessing config:
    None (the model is loaded)."""
    preprocessing = f"open_clip {metadata.version('open_clip_torch')}"
    weights = _hub_weights(body)
    if weights is not None and weights.tag_of is not None:
        if weights.cached is None:
            return None
        return ModelIdentity(weights.fingerprint(digest), f"{preprocessing} {weights.tag_of}")
    arch, pretrained = split_spec(body, lambda name: Path(name).is_file())
    if arch.startswith("local-dir:") and pretrained is None:
        folder = Path(arch[len("local-dir:") :])
        if not folder.is_dir():
            return None
        return ModelIdentity(fingerprint_path(folder, digest), preprocessing)
    if arch.startswith(SCHEMA_PREFIXES) or pretrained is None:
        return None
    weights_file = Path(pretrained).expanduser()
    if not weights_file.is_file():
        return None
    fingerprint = fingerprint_path(weights_file, digest)
    if Path(arch).is_file():  # a model-config JSON: its digest joins the weights'
        return ModelIdentity(f"{fingerprint}:{fingerprint_path(arch, digest)[:16]}", preprocessing)
    # A registry architecture: the weights' hash alone does not say which (quickgelu or not).
    return ModelIdentity(fingerprint, f"{preprocessing} {arch.replace('/', '-')}")


def load(body: str, options: ModelOptions) -> OpenClipScorer:
    """Load ``open_clip:BODY`` on the requested device and precision, in eval mode."""
    offline = _load_offline(body)  # before the imports: hub weights that cannot come fail fast
    import open_clip
    import torch

    spec = f"open_clip:{body}"
    device = resolve_device(options.device)
    precision = effective_precision(options.precision, device)
    source = _resolve_source(body, spec, open_clip)
    if source.weights_path is not None:
        _check_weights_file(source.weights_path, spec)

    with tempfile.TemporaryDirectory(prefix="vlcheck-open-clip-") as scratch:
        if source.config_path is not None:
            source = replace(source, model_name=_register_config(source, Path(scratch), open_clip))
        try:
            with hub_offline() if offline else contextlib.nullcontext():
                model, _, preprocess = open_clip.create_model_and_transforms(
                    source.model_name,
                    pretrained=source.pretrained,
                    precision=precision,
                    device=device,
                    **_weights_only_kwargs(open_clip),
                )
                tokenizer = open_clip.get_tokenizer(source.model_name)
        except VlcheckUserError:
            raise
        except Exception as exc:  # open_clip, torch and safetensors raise many kinds
            raise _load_error(spec, source, exc) from exc
    model.eval()

    common: dict[str, Any] = {
        "name": spec,
        "fingerprint": _fingerprint(body, source),
        "model": model,
        "preprocess": preprocess,
        "tokenizer": tokenizer,
        "device": device,
        "input_dtype": open_clip.get_input_dtype(precision) or torch.float32,
        "batch_size": device_batch_size(options, device),
    }
    calibration = sigmoid_calibration_of(model)
    if calibration is None:
        return OpenClipScorer(**common)
    scale, bias = calibration
    return OpenClipSigmoidScorer(logit_scale=scale, logit_bias=bias, **common)


def split_spec(body: str, known: Callable[[str], bool]) -> tuple[str, str | None]:
    """Split ``ARCH[@PRETRAINED]``; an ``@`` inside a path is kept when the split is ambiguous.

    The first ``@`` whose left side is a known architecture or an existing file (or, after
    ``local-dir:``, an existing directory) wins; otherwise the first ``@`` separates.
    """

    def known_arch(arch: str) -> bool:
        if arch.startswith("local-dir:"):
            return Path(arch[len("local-dir:") :]).is_dir()
        return known(arch)

    if known_arch(body) or "@" not in body:
        return body, None
    positions = [i for i, char in enumerate(body) if char == "@"]
    for position in positions:
        if known_arch(body[:position]):
            return body[:position], body[position + 1 :] or None
    return body[: positions[0]], body[positions[0] + 1 :] or None


def _resolve_source(body: str, spec: str, open_clip: Any) -> _Source:
    if not body.strip():
        raise ModelLoadError(f"{spec}: empty open_clip spec; expected open_clip:ARCH[@PRETRAINED]")
    registry = set(open_clip.list_models())

    def known(arch: str) -> bool:
        return arch.replace("/", "-") in registry or Path(arch).is_file()

    arch, pretrained = split_spec(body, known)
    if arch.startswith(SCHEMA_PREFIXES):
        if pretrained is not None:
            raise ModelLoadError(
                f"{spec}: {arch.split(':', 1)[0]}: specs carry their own weights; "
                "drop the @PRETRAINED part"
            )
        if arch.startswith("local-dir:") and not Path(arch[len("local-dir:") :]).is_dir():
            raise ModelFileNotFoundError(
                f"{spec}: directory not found: {arch[len('local-dir:') :]}; expected a "
                "directory holding open_clip_config.json and the weights"
            )
        return _Source(model_name=arch)

    config_path: Path | None = None
    if arch.endswith(".json") or Path(arch).is_file():
        config_path = Path(arch)
        if not config_path.is_file():
            raise ModelFileNotFoundError(
                f"{spec}: open_clip model config not found: {arch}; expected an existing "
                "model-config .json or a name from open_clip.list_models()"
            )
        model_name = arch
    elif arch.replace("/", "-") in registry:
        model_name = arch.replace("/", "-")
    elif "/" in arch or os.sep in arch:
        raise ModelFileNotFoundError(
            f"{spec}: open_clip model config not found: {arch}; expected an existing "
            "model-config .json or a name from open_clip.list_models()"
        )
    else:
        close = difflib.get_close_matches(arch, sorted(registry), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ModelLoadError(
            f"{spec}: unknown open_clip architecture {arch!r}{hint}; expected a name from "
            "open_clip.list_models() or a path to an open_clip model-config .json"
        )

    tags = [] if config_path else open_clip.list_pretrained_tags_by_model(model_name)
    if pretrained is None:
        tag_hint = f"; tags for {model_name}: {', '.join(tags)}" if tags else ""
        raise ModelLoadError(
            f"{spec}: no weights given (a randomly initialised model is never tested); "
            f"write {spec}@TAG or {spec}@path/to/weights.safetensors{tag_hint}"
        )
    if config_path is None and open_clip.is_pretrained_cfg(model_name, pretrained):
        return _Source(model_name=model_name, pretrained=pretrained, tag=pretrained)
    weights = Path(pretrained).expanduser()
    if weights.is_file():
        resolved = weights.resolve()
        return _Source(
            model_name=model_name,
            config_path=config_path,
            pretrained=str(resolved),
            weights_path=resolved,
        )
    if weights.suffix in WEIGHT_SUFFIXES or "/" in pretrained or os.sep in pretrained:
        raise ModelFileNotFoundError(
            f"{spec}: weights file not found: {pretrained}; expected an existing weights "
            f"file (.safetensors preferred) or a pretrained tag of {model_name}"
        )
    if config_path is not None:
        raise ModelLoadError(
            f"{spec}: {pretrained!r} is not a weights file; a model-config JSON needs a local "
            "weights file (.safetensors preferred)"
        )
    tag_hint = f"; tags for {model_name}: {', '.join(tags)}" if tags else " (it has no tags)"
    raise ModelLoadError(
        f"{spec}: {pretrained!r} is neither a pretrained tag of {model_name} nor a weights "
        f"file{tag_hint}"
    )


def _register_config(source: _Source, scratch: Path, open_clip: Any) -> str:
    """Register a model-config JSON with open_clip under a name unique to its content.

    open_clip keys its registry by file stem and never forgets an entry, so registering
    ``run1/model.json`` and ``run2/model.json`` as ``model`` would let one shadow the other
    (and a file called ``ViT-B-32.json`` would shadow the built-in). A copy named
    ``STEM-vlcheck-HASH`` keeps every config distinct; the stem is kept because open_clip
    chooses the SigLIP tokenizer by name.
    """
    assert source.config_path is not None
    try:
        text = source.config_path.read_text(encoding="utf-8")
        deep = json_too_deep(text)
        if deep is not None:
            raise ModelLoadError(f"{source.config_path}:{deep}: {TOO_DEEP}")
        config = json.loads(text)
    except UnicodeDecodeError as exc:
        raise ModelLoadError(
            f"{source.config_path}: not UTF-8 text ({exc.reason}); expected an open_clip "
            "model-config JSON saved as UTF-8"
        ) from None
    except json.JSONDecodeError as exc:
        raise ModelLoadError(
            f"{source.config_path}:{exc.lineno}: invalid JSON in open_clip model config: {exc.msg}"
        ) from exc
    missing = [key for key in ("embed_dim", "vision_cfg", "text_cfg") if key not in config]
    if not isinstance(config, dict) or missing:
        raise ModelLoadError(
            f"{source.config_path}: not an open_clip model config: missing "
            f"{', '.join(missing) or 'an object'}; expected keys embed_dim, vision_cfg, text_cfg"
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    unique = f"{source.config_path.stem}-vlcheck-{digest}"
    copy = scratch / f"{unique}.json"
    copy.write_text(text, encoding="utf-8")
    open_clip.add_model_config(copy)
    return unique


def _weights_only_kwargs(open_clip: Any) -> dict[str, Any]:
    """``weights_only=True`` where open_clip takes it (newer versions; older ones lack it)."""
    parameters = inspect.signature(open_clip.create_model_and_transforms).parameters
    return {"weights_only": True} if "weights_only" in parameters else {}


def _check_weights_file(path: Path, spec: str) -> None:
    """Refuse a corrupt weights file, and a torch checkpoint that only loads through
    unrestricted unpickling, before open_clip sees either."""
    if path.suffix in NUMPY_SUFFIXES:
        return
    if path.suffix in SAFE_SUFFIXES:
        _check_safetensors(path, spec)
        return
    import pickle

    import torch

    with path.open("rb") as handle:
        magic = handle.read(4)
    if not (magic.startswith(b"PK\x03\x04") or magic[:1] == b"\x80"):  # zip or pickle
        raise ModelLoadError(
            f"{spec}: weights file {path} is corrupt or not a torch checkpoint (it starts "
            f"with {magic!r}); expected a .safetensors file or a checkpoint saved with "
            "torch.save"
        )
    try:
        try:
            torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, TypeError, AttributeError, EOFError) as exc:
        if "weights only" not in str(exc).lower():
            raise ModelLoadError(
                f"{spec}: weights file {path} is corrupt or not a torch checkpoint "
                f"({short_detail(exc, 160)}); expected a .safetensors file or a checkpoint "
                "saved with torch.save"
            ) from exc
        raise ModelLoadError(
            f"{spec}: {path} is not a plain weights checkpoint (it would need unrestricted "
            f"unpickling, which vlcheck refuses): {short_detail(exc, 200)}; save it as "
            ".safetensors"
        ) from exc


def _check_safetensors(path: Path, spec: str) -> None:
    """Read the header: a truncated or foreign file fails here with a clear message."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            handle.keys()
    except Exception as exc:  # safetensors raises its own SafetensorError, or OSError
        raise ModelLoadError(
            f"{spec}: weights file {path} is not a readable safetensors file "
            f"({short_detail(exc, 160)}); expected weights saved with safetensors "
            "(e.g. safetensors.torch.save_file)"
        ) from exc


@dataclass(frozen=True)
class _HubWeights:
    """Weights a spec names on the Hugging Face Hub, and their file in the local cache."""

    spec: str
    what: str  # for messages: "pretrained weights 'openai'"
    name: str  # ARCH@TAG or hf-hub:REPO
    cached: str | None
    tag_of: str | None = None  # the registry architecture, for a pretrained tag

    def fingerprint(self, digest: Digest | None = None) -> str:
        """The weights' sha256 under the spec's name; the name alone while not cached."""
        if self.cached is None:
            return f"open_clip:{self.name}"
        return f"open_clip:{self.name}:{fingerprint_path(self.cached, digest)}"


def _hub_weights(body: str) -> _HubWeights | None:
    """The hub weights ``body`` names (a pretrained tag of a registry architecture, or an
    ``hf-hub:`` repo), found with open_clip's tag table alone; None for local weights, and for
    a spec that is not valid (``load`` says why)."""
    arch, _ = split_spec(body, lambda name: Path(name).is_file())
    if Path(arch).is_file() and not arch.startswith("hf-hub:"):
        return None  # a model-config file: local weights, and no need to read the tag table
    table = pretrained_table()
    if table is None:
        return None

    def has_tags(arch: str) -> bool:
        return bool(table.list_pretrained_tags_by_model(arch.replace("/", "-")))

    arch, pretrained = split_spec(body, lambda name: has_tags(name) or Path(name).is_file())
    spec = f"open_clip:{body}"
    if arch.startswith("hf-hub:") and pretrained is None:
        cached = _cached_hub_file(arch[len("hf-hub:") :], HUB_WEIGHT_NAMES)
        return _HubWeights(spec, "the weights of this hub repo", arch, cached)
    model = arch.replace("/", "-")
    if pretrained is None or Path(arch).is_file() or not table.is_pretrained_cfg(model, pretrained):
        return None
    cached = cached_tag_file(model, pretrained, table)
    what = f"pretrained weights {pretrained!r}"
    return _HubWeights(spec, what, f"{model}@{pretrained}", cached, tag_of=model)


def _load_offline(body: str) -> bool:
    """Whether to load the spec's hub weights offline: True when they are cached (no network
    calls at all). Weights neither cached nor downloadable fail here, before open_clip (and
    torch) are imported: an offline machine hears so in a second, not after the imports and
    a minute of the hub client's retries."""
    weights = _hub_weights(body)
    if weights is None:
        return False
    if weights.cached is not None:
        return True
    unreachable = hub_unreachable_reason()
    if unreachable is None:
        return False
    raise WeightsUnavailableError(
        f"{weights.spec}: could not fetch {weights.what}: they are not in the local cache "
        f"(looked in {hub_cache_dir()} and ~/.cache/clip) and {unreachable}; download them "
        "where the network is reachable, or point at local files: "
        "open_clip:ARCH@/path/to/weights.safetensors"
    )


def _load_error(spec: str, source: _Source, exc: Exception) -> ModelLoadError:
    """A short error naming the spec instead of open_clip's deep traceback."""
    detail = short_detail(exc)
    if source.tag is not None or source.model_name.startswith("hf-hub:"):
        return WeightsUnavailableError(
            f"{spec}: could not fetch pretrained weights {source.tag or source.model_name!r}: "
            f"{detail}; expected a tag listed by open_clip.list_pretrained(), or local files: "
            "open_clip:ARCH@/path/to/weights.safetensors"
        )
    if source.weights_path is not None:
        return ModelLoadError(
            f"{spec}: weights file {source.weights_path} does not fit the architecture: "
            f"{detail}; expected weights saved from the same architecture"
        )
    return ModelLoadError(f"{spec}: could not load the model: {detail}")


def _fingerprint(body: str, source: _Source) -> str:
    """sha256 of the weights (plus the config JSON's, if one was given), or of the cached hub
    weights under the spec's name."""
    if source.weights_path is not None:
        weights = fingerprint_path(source.weights_path)
        if source.config_path is None:
            return weights
        return f"{weights}:{fingerprint_path(source.config_path)[:16]}"
    if source.model_name.startswith("local-dir:"):
        return fingerprint_path(source.model_name[len("local-dir:") :])
    hub = _hub_weights(body)
    assert hub is not None, body  # the remaining sources are tags and hf-hub repos
    return hub.fingerprint()


def cached_tag_file(
    model_name: str, tag: str, table: Any, cache_dir: str | None = None
) -> str | None:
    """The locally cached weights file of a pretrained tag, found without the network from
    ``table`` (open_clip, or ``open_clip_tags.pretrained_table()``).

    Mirrors where open_clip's downloader puts it: the Hugging Face cache (safetensors
    sibling first) when the tag names a hub repo, else ``~/.cache/clip/<url basename>``.
    """
    config = table.get_pretrained_cfg(model_name, tag)
    if not config:
        return None
    if config.get("file"):
        return str(config["file"]) if Path(config["file"]).is_file() else None
    hub = config.get("hf_hub", "")
    if hub:
        repo, filename = os.path.split(hub)
        filename = filename or "open_clip_pytorch_model.bin"
        candidates = [*_safetensors_siblings(filename), filename]
        found = _cached_hub_file(repo, candidates, cache_dir)
        if found is not None:
            return found
    url = config.get("url", "")
    if url:
        target = Path(cache_dir or os.path.expanduser("~/.cache/clip")) / os.path.basename(url)
        if target.is_file():
            return str(target)
    return None


def _safetensors_siblings(filename: str) -> list[str]:
    if filename == "open_clip_pytorch_model.bin":
        return ["open_clip_model.safetensors"]
    if filename.endswith((".bin", ".pth")):
        return [filename[:-4] + ".safetensors"]
    return []


def _cached_hub_file(
    repo: str, filenames: tuple[str, ...] | list[str], cache_dir: str | None = None
) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for filename in filenames:
        found = try_to_load_from_cache(repo, filename, cache_dir=cache_dir)
        if isinstance(found, str) and Path(found).is_file():
            return found
    return None


def _whole(item: Any, torch: Any) -> bool:
    """Whether ``item`` is the whole transform's output (a float tensor), not uint8 pixels
    (an array, or a tensor decoded on the device) that ``CompactTransform.finish`` ends."""
    return isinstance(item, torch.Tensor) and item.dtype != torch.uint8
