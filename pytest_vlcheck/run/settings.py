"""Option values -> the run's validated, frozen ``Settings``, with no pytest in sight.

The plugin (``--vl-*`` options and their ini twins) and the Python API (``evaluate``'s
keyword arguments) both hand their raw values to ``build_settings`` through an
``OptionSource``, so one set of checks and one set of messages serve both; each message names
the option the way its caller spelled it (``--vl-report``, ``report_dir``,
``vl_batch_size (ini)``). Every mistake is a ``SettingsError``, found before any scoring.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pytest_vlcheck import bounds
from pytest_vlcheck.engine.judging.missing import MISSING_POLICIES, MissingPolicy
from pytest_vlcheck.errors import ModelSpecError, SettingsError
from pytest_vlcheck.gates import Baseline, GateSettings
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP, GATE_CLUSTERS
from pytest_vlcheck.images.loading import set_max_image_pixels
from pytest_vlcheck.models.backends.served.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_REQUEST_TIMEOUT,
    MAX_CONCURRENCY,
    MAX_REQUEST_TIMEOUT,
    ServedOptions,
)
from pytest_vlcheck.models.backends.vqa_prompt import (
    DEFAULT_ANSWER,
    DEFAULT_QUESTION,
    VqaPrompt,
    VqaPromptError,
)
from pytest_vlcheck.models.checkpoints import unstepped
from pytest_vlcheck.models.pixels.device_transform import on_accelerator
from pytest_vlcheck.models.protocol import DECODES, PRECISIONS, ModelOptions
from pytest_vlcheck.models.registry import ModelSpec, parse_specs
from pytest_vlcheck.results.json_checks import ReportFormatError

DEFAULTS: dict[str, Any] = {
    "model": (),
    "device": "auto",
    "batch_size": "auto",
    "precision": "fp32",
    "decode": "cpu",
    "workers": None,
    "vqa_question": DEFAULT_QUESTION,
    "vqa_answer": DEFAULT_ANSWER,
    "vqa_mode": "answer",
    "vqa_preset": None,
    "concurrency": DEFAULT_CONCURRENCY,
    "request_timeout": DEFAULT_REQUEST_TIMEOUT,
    "api_key_env": None,
    "image_root": None,
    "threshold": None,
    "missing": "error",
    "cache_dir": None,
    "no_cache": False,
    "cache_size": "2GB",
    "image_memory": "2GB",
    "report_dir": None,
    "max_image_pixels": None,
    "baseline": None,
    "save_baseline": None,
    "max_drop": DEFAULT_MAX_DROP,
    "alpha": DEFAULT_ALPHA,
    "gate_clusters": "on",
    "baseline_model": None,
    "gate_only": False,
    "prior": (),
    "log": (),
    "step": None,
}
"""Every run option, by its Python name, with the value it takes when not given."""


@dataclass(frozen=True)
class Settings:
    """The run's options, as parsed from the command line and ini file."""

    specs: tuple[ModelSpec, ...] = ()
    model_options: ModelOptions = field(default_factory=ModelOptions)
    image_root: Path | None = None
    threshold: float | None = None
    missing: MissingPolicy = "error"
    report_dir: Path | None = None
    url_cache_dir: Path | None = None
    rootdir: Path | None = None
    gates: GateSettings = field(default_factory=GateSettings)
    save_baseline: Path | None = None
    priors: tuple[str, ...] = ()
    """``--vl-prior`` specs (already parsed once for errors); several are averaged."""
    embedding_cache_dir: Path | None = None
    """Root of the embedding cache (``--vl-cache-dir``); None turns it off (``--vl-no-cache``)."""
    embedding_cache_bytes: int = bounds.DEFAULT_CACHE_BYTES
    image_memory_bytes: int = bounds.DEFAULT_IMAGE_MEMORY
    """Preprocessed images a live model keeps across calls (``--vl-image-memory``)."""
    log_specs: tuple[Any, ...] = ()
    """Loggers (``--vl-log``, ``log=``): specs or callables, checked when parsed."""
    step: int | None = None
    """The training step the run's scalars are logged at (``--vl-step``, ``step=``)."""


T = TypeVar("T")


@dataclass(frozen=True)
class Raw:
    """One option's value as given (None: not given) and the name its caller knows it by."""

    value: Any
    where: str


class OptionSource(Protocol):
    """Where option values come from: pytest's config, or Python keyword arguments."""

    rootdir: Path
    """Report paths are written relative to it (and baseline keys matched)."""

    def get(self, key: str) -> Raw:
        """The value of option ``key`` (a key of ``DEFAULTS``), defaults applied."""
        ...

    def cache_root(self, kind: str) -> Path:
        """Where the ``kind`` cache (``images``, ``embeddings``) lives when no ``cache_dir``
        is given."""
        ...


class KeywordOptions:
    """Options given as Python keyword arguments (``evaluate(..., batch_size=32)``)."""

    def __init__(self, values: Mapping[str, Any], rootdir: Path | None = None) -> None:
        check_keywords(values)
        self.values = dict(values)
        self.rootdir = (rootdir or Path.cwd()).resolve()

    def get(self, key: str) -> Raw:
        """The keyword's value, or its default; messages name the keyword."""
        value = self.values.get(key, DEFAULTS[key])
        return Raw(DEFAULTS[key] if value is None and key not in _NONE_OK else value, key)

    def cache_root(self, kind: str) -> Path:
        """A ``.vlcheck_cache`` folder in the root directory (the current one by default)."""
        return self.rootdir / ".vlcheck_cache" / kind


_NONE_OK = {key for key, default in DEFAULTS.items() if default is None}


def check_keywords(values: Mapping[str, Any]) -> None:
    """Refuse a keyword that is no run option, suggesting the nearest one."""
    refuse_unknown(values, list(DEFAULTS), "a vlcheck option")


def refuse_unknown(values: Mapping[str, Any], known: Sequence[str], what: str) -> None:
    """A ``SettingsError`` for the first key of ``values`` not in ``known`` (``what`` each
    of them is), with the nearest known one."""
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise SettingsError(f"{key}: not {what}; {hint}expected one of {', '.join(known)}")


def build_settings(source: OptionSource) -> Settings:
    """The run's settings from ``source``; raises SettingsError on the first bad value."""
    precision, missing = source.get("precision"), source.get("missing")
    decode, device = source.get("decode"), source.get("device")
    for raw, choices in ((precision, PRECISIONS), (missing, MISSING_POLICIES), (decode, DECODES)):
        if raw.value not in choices:
            raise SettingsError(f"{raw.where} is '{raw.value}'; expected one of {choices}")
    batch_size, auto_batch = _batch_size(source.get("batch_size"))
    max_pixels = _bounded(
        source.get("max_image_pixels"), bounds.whole_number, 1, bounds.MAX_IMAGE_PIXELS
    )
    if max_pixels is not None:  # Pillow's limit is process-wide: set it now
        set_max_image_pixels(max_pixels)
    threshold = _bounded(source.get("threshold"), bounds.finite_number, 0, 1)
    cache_bytes = _bounded(source.get("cache_size"), bounds.size, bounds.MAX_CACHE_BYTES)
    image_memory = _bounded(source.get("image_memory"), bounds.size, bounds.MAX_CACHE_BYTES)
    image_root = source.get("image_root").value
    specs = model_specs(source.get("model"))
    return Settings(
        rootdir=source.rootdir,
        gates=_gate_settings(source),
        save_baseline=_save_baseline_path(source.get("save_baseline")),
        priors=_prior_specs(source.get("prior")),
        specs=specs,
        model_options=ModelOptions(
            device=source.get("device").value,
            batch_size=batch_size,
            precision=precision.value,
            auto_batch=auto_batch,
            vqa=_vqa_prompt(source),
            decode=_decode(decode, device),
            workers=_bounded(source.get("workers"), bounds.whole_number, 1, bounds.MAX_WORKERS),
            served=_served(source),
        ),
        image_root=Path(image_root).resolve() if image_root else None,
        threshold=threshold,
        missing=missing.value,
        report_dir=_report_dir(source.get("report_dir")),
        url_cache_dir=_cache_root(source, "images"),
        embedding_cache_dir=None
        if source.get("no_cache").value
        else _cache_root(source, "embeddings"),
        embedding_cache_bytes=bounds.DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes,
        image_memory_bytes=bounds.DEFAULT_IMAGE_MEMORY if image_memory is None else image_memory,
        log_specs=_logger_specs(source.get("log"), specs),
        step=_step(source.get("step"), specs),
    )


def _decode(decode: Raw, device: Raw) -> Any:
    """``gpu`` only with the model on an accelerator: decoding on the CPU's "device" is the
    PIL path with extra steps (checked without importing torch unless ``gpu`` is asked)."""
    if decode.value == "gpu" and not on_accelerator(device.value):
        raise SettingsError(
            f"{decode.where} is 'gpu' but the model runs on the CPU ({device.where} is "
            f"'{device.value}'); expected a CUDA device or decode 'cpu'"
        )
    return decode.value


def _vqa_prompt(source: OptionSource) -> VqaPrompt:
    """What a generative model is asked, checked now (a template without ``{}`` is refused
    before any scoring)."""
    raws = [source.get(f"vqa_{key}") for key in ("question", "answer", "mode", "preset")]
    for raw in raws:
        if not isinstance(raw.value, str) and not (raw is raws[-1] and raw.value is None):
            raise SettingsError(f"{raw.where} is {raw.value!r}; expected a string")
    prompt = VqaPrompt(*(raw.value for raw in raws))
    try:
        prompt.check([raw.where for raw in raws])
    except VqaPromptError as exc:
        raise SettingsError(str(exc)) from None
    return prompt


def _served(source: OptionSource) -> ServedOptions:
    """How served models are reached; the API key's variable is a name, never a key."""
    key_env = source.get("api_key_env")
    if key_env.value is not None and not (
        isinstance(key_env.value, str) and key_env.value.isidentifier()
    ):
        raise SettingsError(
            f"{key_env.where} is not a variable name; expected the NAME of the environment "
            "variable that holds the API key (e.g. VLLM_API_KEY), not the key itself"
        )
    concurrency = _bounded(source.get("concurrency"), bounds.whole_number, 1, MAX_CONCURRENCY)
    timeout = _bounded(
        source.get("request_timeout"), bounds.finite_number, 0, MAX_REQUEST_TIMEOUT, open_low=True
    )
    return ServedOptions(
        concurrency=DEFAULT_CONCURRENCY if concurrency is None else concurrency,
        request_timeout=DEFAULT_REQUEST_TIMEOUT if timeout is None else timeout,
        api_key_env=key_env.value,
    )


def _logger_specs(raw: Raw, models: tuple[ModelSpec, ...]) -> tuple[Any, ...]:
    """Logger specs (one, or a list), each checked cheaply now, and the models' scalar
    prefixes told apart: a bad one costs no scoring."""
    from pytest_vlcheck.loggers import LoggerSpecError, check_logger_spec
    from pytest_vlcheck.loggers.scalars import ScalarNameError, check_prefixes

    specs = tuple(raw.value) if isinstance(raw.value, (list, tuple)) else (raw.value,)
    try:
        for spec in specs:
            check_logger_spec(spec, raw.where)
    except LoggerSpecError as exc:
        raise SettingsError(str(exc)) from None
    try:
        if specs and len(models) > 1:
            check_prefixes(model.group or model.name for model in models)
    except ScalarNameError as exc:
        raise SettingsError(f"{raw.where}: {exc}") from None
    no_step = unstepped(models)
    if specs and no_step:
        raise SettingsError(f"{raw.where}: {no_step}; a logger's curve needs them")
    return specs


def _step(raw: Raw, specs: tuple[ModelSpec, ...]) -> int | None:
    """The training step: a whole number, and not beside a checkpoint glob, whose
    checkpoints carry their own steps."""
    step = _bounded(raw, bounds.whole_number, 0, bounds.MAX_STEP)
    if step is not None and any(spec.group is not None for spec in specs):
        raise SettingsError(
            f"{raw.where}: a checkpoint glob reads each checkpoint's step from its file "
            "name; expected no step with a glob"
        )
    return step


def _bounded(raw: Raw, parse: Callable[..., T], *limits: Any, **flags: bool) -> T | None:
    """``parse(raw.value, *limits)`` (a ``bounds`` parser), None when not given; a value
    out of bounds is a SettingsError naming the option as its caller spelled it."""
    if raw.value is None:
        return None
    try:
        return parse(raw.value, *limits, **flags)
    except bounds.BoundError as exc:
        raise SettingsError(f"{raw.where} {exc}") from None


def model_specs(raw: Raw) -> tuple[ModelSpec, ...]:
    """Parse the model specs (a string or a list of them; NAME=SPEC names one)."""
    texts = [raw.value] if isinstance(raw.value, str) else list(raw.value)
    try:
        return tuple(parse_specs(texts))
    except ModelSpecError as exc:
        raise SettingsError(f"{raw.where}: {exc}") from None


def _prior_specs(raw: Raw) -> tuple[str, ...]:
    """The prior specs, checked now: a bad one is refused before scoring."""
    texts = (raw.value,) if isinstance(raw.value, str) else tuple(raw.value)
    if not texts:  # the priors' registry loads numpy: not for a run without a prior
        return ()
    from pytest_vlcheck.priors import PriorSpecError, parse_prior_spec

    try:
        for text in texts:
            parse_prior_spec(text)
    except PriorSpecError as exc:
        raise SettingsError(f"{raw.where}: {exc}") from None
    return texts


def _cache_root(source: OptionSource, kind: str) -> Path:
    """``cache_dir`` (the root for every cache), else the source's own place for ``kind``."""
    cache_dir = source.get("cache_dir").value
    if cache_dir:
        return Path(cache_dir).resolve()
    return source.cache_root(kind)


def _batch_size(raw: Raw) -> tuple[int, bool]:
    """A number from 1 to ``MAX_BATCH_SIZE`` (0 is refused, not replaced), or ``auto`` (the
    CPU default, and backends size it to their device)."""
    if isinstance(raw.value, str) and raw.value.strip() == "auto":
        return ModelOptions.batch_size, True
    try:
        return bounds.whole_number(raw.value, 1, bounds.MAX_BATCH_SIZE), False
    except bounds.BoundError as exc:
        raise SettingsError(f"{raw.where} {exc}, or auto") from None


def _report_dir(raw: Raw) -> Path | None:
    """The report folder, checked writable now: a bad one is refused before scoring."""
    if raw.value is None:
        return None
    from pytest_vlcheck.report import REPORT_FILES
    from pytest_vlcheck.report.thumbnails import THUMBNAIL_DIR
    from pytest_vlcheck.results.manifest import MANIFEST
    from pytest_vlcheck.results.samples import SAMPLES

    folder = Path(raw.value)
    where = f"{raw.where} {raw.value}"
    _check_writable(folder, where)
    for name in (*REPORT_FILES, SAMPLES, MANIFEST):
        if (folder / name).is_dir():
            raise SettingsError(
                f"{where}: {folder / name} is a folder; expected the report file "
                "of that name, or nothing there"
            )
    if (folder / THUMBNAIL_DIR).exists() and not (folder / THUMBNAIL_DIR).is_dir():
        raise SettingsError(
            f"{where}: {folder / THUMBNAIL_DIR} is a file; expected the report's "
            "thumbnail folder, or nothing there"
        )
    return folder


def _save_baseline_path(raw: Raw) -> Path | None:
    """The baseline file a run merges into, checked now (its folder writable, an existing
    file a readable baseline): found at the end, the mistake would cost the whole run."""
    if raw.value is None:
        return None
    path = Path(raw.value)
    if path.is_dir():
        raise SettingsError(f"{raw.where} {raw.value} is a folder; expected the baseline file")
    _check_writable(path.parent, f"{raw.where} {raw.value}")
    if path.exists():
        try:
            Baseline.load(path)
        except ReportFormatError as exc:
            raise SettingsError(
                f"{raw.where}: {exc}; expected a baseline file to merge into, or a new path"
            ) from None
    return path


def _check_writable(directory: Path, where: str) -> None:
    """Create ``directory`` and write a probe file in it, or raise a one-line error."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".vlcheck-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SettingsError(
            f"{where}: cannot write there ({reason}); expected a writable folder"
        ) from None


def _gate_settings(source: OptionSource) -> GateSettings:
    """The baseline to gate against (a bad file is refused before any scoring)."""
    alpha = _bounded(source.get("alpha"), bounds.finite_number, 0, 1, open_low=True, open_high=True)
    max_drop = _bounded(source.get("max_drop"), bounds.finite_number, 0, bounds.MAX_DROP_PTS)
    given, model = source.get("baseline"), source.get("baseline_model")
    clusters = source.get("gate_clusters")
    if clusters.value not in GATE_CLUSTERS:
        raise SettingsError(
            f"{clusters.where} is '{clusters.value}'; expected one of {GATE_CLUSTERS}"
        )
    baseline = None
    if given.value:
        try:
            baseline = Baseline.load(given.value)
        except ReportFormatError as exc:
            raise SettingsError(f"{given.where}: {exc}") from None
        models = sorted({entry.model for entry in baseline.entries})
        if model.value is not None and model.value not in models:
            raise SettingsError(
                f"{model.where} is {model.value!r}, which {given.value} does not hold; "
                f"expected one of: {', '.join(models)}"
            )
    return GateSettings(
        baseline=baseline,
        baseline_model=model.value,
        max_drop_pts=DEFAULT_MAX_DROP if max_drop is None else max_drop,
        alpha=DEFAULT_ALPHA if alpha is None else alpha,
        gate_only=bool(source.get("gate_only").value),
        use_clusters=clusters.value == "on",
    )
