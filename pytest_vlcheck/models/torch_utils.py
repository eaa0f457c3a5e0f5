"""Helpers shared by the torch backends: device and precision choice, weight fingerprints.

torch is imported inside the functions that need it, so importing this module stays cheap
(the plugin imports backend modules at collection time without loading a model).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_vlcheck.errors import DeviceError
from pytest_vlcheck.models.protocol import PRECISIONS, Digest, ModelOptions

if TYPE_CHECKING:
    import numpy as np
    import torch

T = TypeVar("T")

ForwardContext = Callable[[], AbstractContextManager[Any]]
"""What an encoder enters around its forward passes: ``inference_context`` for a model the
backend built itself, the live guard (``models.live_guard``) for a caller's model."""


# Files that decide what a model computes: weights, configs, tokenizer vocabularies.
FINGERPRINT_SUFFIXES = frozenset(
    {
        ".safetensors",
        ".bin",
        ".pt",
        ".pth",
        ".ckpt",
        ".npz",
        ".json",
        ".txt",
        ".model",
        ".gz",
        ".jinja",  # chat templates: they make a generative model's prompt
    }
)

_CHUNK = 1 << 20


class FileHashes:
    """sha256 of files by (path, size, mtime_ns, inode, ctime_ns): hashing a multi-GB
    checkpoint costs seconds, and a session asks for the same fingerprint several times.

    Lifetime: the process (``FILE_HASHES``): an entry is valid as long as the file's stat
    is the same, whoever asks, and a training loop's sessions ask again and again."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int, int, int], str] = {}

    def sha256(self, path: Path) -> str:
        """sha256 hex of the file's bytes, read once while its stat is unchanged."""
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)
        found = self._known.get(key)
        if found is None:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            found = self._known[key] = digest.hexdigest()
        return found


FILE_HASHES = FileHashes()
"""The process's file hashes (made at import)."""


class TruncationWarning(UserWarning):
    """A text was longer than the model's context and was cut; its score covers the prefix."""


class BatchSizeWarning(UserWarning):
    """A batch ran the GPU out of memory; the run goes on with smaller batches."""


GPU_BATCH_SIZE = 256
"""Inputs per forward pass on a CUDA device when ``--vl-batch-size`` is ``auto`` (a batch
that does not fit is halved until it does); elsewhere ``ModelOptions.batch_size`` (64)."""


def device_batch_size(options: ModelOptions, device: str) -> int:
    """The batch a torch backend starts with on ``device``: the user's number, or with
    ``auto`` ``GPU_BATCH_SIZE`` on CUDA and the default elsewhere."""
    if options.auto_batch and device.startswith("cuda"):
        return GPU_BATCH_SIZE
    return options.batch_size


def run_in_batches(
    items: Sequence[T], owner: Any, forward: Callable[[Sequence[T]], np.ndarray | torch.Tensor]
) -> np.ndarray:
    """``forward`` over consecutive chunks of ``owner.batch_size`` items, rows joined as fp32.

    A ``forward`` may return its device tensor instead of numpy: it is copied back only once
    the next chunk is launched, so beside an accelerator the host prepares chunk k + 1 (a
    tokenizer's Python) while the device still runs chunk k (CUDA runs a launched forward
    pass asynchronously; on the CPU the order of the same work is all that changes).

    A chunk that runs the GPU out of memory is tried again at half the size, and
    ``owner.batch_size`` keeps the smaller size for the rest of the run (one
    ``BatchSizeWarning`` per halving); at one item the error is raised.
    """
    import torch

    parts: list[Any] = []
    start = 0
    while start < len(items):
        size = max(1, int(owner.batch_size))
        try:
            out = forward(items[start : start + size])
        except torch.cuda.OutOfMemoryError:
            if size == 1:
                raise
            torch.cuda.empty_cache()
            owner.batch_size = size // 2
            warnings.warn(
                f"{getattr(owner, 'name', 'model')}: a batch of {size} ran the GPU out of "
                f"memory; going on with batches of {owner.batch_size} (--vl-batch-size sets it)",
                BatchSizeWarning,
                stacklevel=2,
            )
            continue
        if parts and isinstance(parts[-1], torch.Tensor):
            parts[-1] = to_float32_numpy(parts[-1])
        # kept as a copy of its own: a compiled forward (CUDA graphs) reuses its output
        parts.append(out.detach().clone() if isinstance(out, torch.Tensor) else out)
        start += size
    if parts and isinstance(parts[-1], torch.Tensor):
        parts[-1] = to_float32_numpy(parts[-1])
    return concat_rows(parts)


def resolve_device(name: str) -> str:
    """Turn ``--vl-device`` into a torch device string that is usable on this machine.

    ``auto`` picks cuda (under ``torchrun`` the rank's ``LOCAL_RANK``; else one GPU per
    xdist worker, round robin), then mps, then cpu. An
    explicit device that does not exist here is an error rather than a silent fallback, so a
    CI job asking for a GPU never runs on the CPU.
    """
    import torch

    text = (name or "").strip()
    if text in ("", "auto"):
        if torch.cuda.is_available():
            local = os.environ.get("LOCAL_RANK", "")
            if local.isdigit():
                return f"cuda:{int(local) % torch.cuda.device_count()}"
            worker = os.environ.get("PYTEST_XDIST_WORKER")
            return auto_cuda_device(torch.cuda.device_count(), worker)
        if _mps_available(torch):
            return "mps"
        return "cpu"
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise DeviceError(f"invalid device {name!r} (--vl-device); {_DEVICES}") from None
    if device.type == "cpu":
        return str(device)
    if device.type == "cuda":
        return _check_cuda(name, device, torch)
    if device.type == "mps":
        if not _mps_available(torch):
            raise DeviceError(
                f"device {name!r} (--vl-device) requested but MPS is not available on this "
                f"machine; {_usable(torch)}"
            )
        return str(device)
    backend = getattr(torch, device.type, None)
    is_available = getattr(backend, "is_available", None)
    if callable(is_available) and is_available():
        return str(device)
    raise DeviceError(f"device {name!r} (--vl-device) is not usable here; {_usable(torch)}")


def auto_cuda_device(count: int, worker: str | None) -> str:
    """``cuda``, or with several GPUs under pytest-xdist ``cuda:K mod N`` for worker ``gwK``,
    so that ``-n N`` on an N-GPU machine puts one worker (one model copy) on each GPU."""
    if count > 1 and worker and worker.startswith("gw") and worker[2:].isdigit():
        return f"cuda:{int(worker[2:]) % count}"
    return "cuda"


_DEVICES = "expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"


def _check_cuda(name: str, device: torch.device, torch: Any) -> str:
    if not torch.cuda.is_available():
        raise DeviceError(
            f"device {name!r} (--vl-device) requested but CUDA is not available on this "
            f"machine; {_usable(torch)}"
        )
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise DeviceError(
            f"device {name!r} (--vl-device) requested but only {count} CUDA device(s) exist "
            f"here; {_usable(torch)}"
        )
    return str(device)


def _usable(torch: Any) -> str:
    """The devices this machine offers, for the 'expected' part of a device error."""
    names = ["auto", "cpu"]
    if torch.cuda.is_available():
        names += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    if _mps_available(torch):
        names.append("mps")
    return "expected one of: " + ", ".join(names)


def _mps_available(torch: Any) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def effective_precision(precision: str, device: str) -> str:
    """The precision actually run on ``device``.

    fp16 on the CPU falls back to fp32 with a warning: many CPU kernels lack fp16 or run it
    far slower than fp32, and fp32 is the reference the scores are compared against anyway.
    bf16 is kept on the CPU (it has native kernels there); bf16 on a GPU without bf16 support
    is an error.
    """
    check_precision(precision)
    if computed_precision(precision, device) != precision:
        warnings.warn(
            "precision fp16 is not supported on the CPU; running in fp32 instead",
            UserWarning,
            stacklevel=2,
        )
        return "fp32"
    if precision == "bf16" and device.split(":")[0] == "cuda":
        import torch

        if not torch.cuda.is_bf16_supported():
            raise DeviceError(
                f"precision 'bf16' (--vl-precision) is not supported on {device} (this GPU "
                "has no bfloat16); expected fp16 or fp32"
            )
    return precision


def computed_precision(precision: str, device: str) -> str:
    """The precision a torch backend computes in on ``device`` (``auto`` too), without the
    warning: fp16 on the CPU is fp32, the rest as asked. Cache namespaces and run conditions
    name it, so vectors are filed under what made them; only fp16 on ``auto`` imports torch
    (to see whether a GPU is there)."""
    if precision == "fp16" and device.strip() in ("", "auto"):
        device = resolve_device(device)
    return "fp32" if precision == "fp16" and device.split(":")[0] == "cpu" else precision


def check_precision(precision: str) -> None:
    """Reject a precision name other than fp32/fp16/bf16."""
    if precision not in PRECISIONS:
        raise DeviceError(
            f"invalid precision {precision!r} (--vl-precision); expected one of "
            f"{', '.join(PRECISIONS)}"
        )


def torch_dtype(precision: str) -> torch.dtype:
    """The torch dtype of a precision name (``fp32``, ``fp16``, ``bf16``)."""
    import torch

    check_precision(precision)
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def fingerprint_path(path: str | os.PathLike[str], digest: Digest | None = None) -> str:
    """sha256 hex of a weights file, or of a directory's weight/config/tokenizer files.

    For a directory, every file whose suffix is in ``FINGERPRINT_SUFFIXES`` (searched
    recursively, hidden entries skipped) contributes its relative name and its own sha256, in
    sorted order, so renaming or editing any of them changes the result. Files are hashed
    through ``digest`` when given (``EmbeddingCache.file_digest`` reads an unchanged 600 MB
    checkpoint once, not on every run), else through a per-process memo.
    """
    hash_file = sha256_file if digest is None else digest
    target = Path(path)
    if target.is_file():
        return _weights_digest(target, hash_file)
    if not target.is_dir():
        raise FileNotFoundError(f"cannot fingerprint {str(path)!r}: no such file or directory")
    combined = hashlib.sha256()
    for rel in _fingerprint_members(target):
        combined.update(rel.encode("utf-8"))
        combined.update(b"\0")
        combined.update(_weights_digest(target / rel, hash_file).encode("ascii"))
        combined.update(b"\n")
    return combined.hexdigest()


def _weights_digest(path: Path, hash_file: Digest) -> str:
    real = path.resolve()
    # A Hugging Face cache blob is named by the sha256 of its content: no need to read it.
    return (
        real.name if real.parent.name == "blobs" and _is_sha256_hex(real.name) else hash_file(real)
    )


def _fingerprint_members(root: Path) -> list[str]:
    members = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in filenames:
            if filename.startswith(".") or Path(filename).suffix not in FINGERPRINT_SUFFIXES:
                continue
            members.append(Path(dirpath, filename).relative_to(root).as_posix())
    return sorted(members)


def sha256_file(path: Path) -> str:
    """sha256 hex of a file's bytes, remembered for the process while its stat (size, mtime,
    inode, ctime) is unchanged: naming a model for the embedding cache and loading it hash
    a large checkpoint once, not twice (``FILE_HASHES``)."""
    return FILE_HASHES.sha256(path)


def _is_sha256_hex(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def inference_context() -> AbstractContextManager[Any]:
    """``torch.inference_mode()``: the cheapest no-grad mode, for models no one trains."""
    import torch

    return torch.inference_mode()


def sigmoid_calibration_of(model: Any) -> tuple[float, float] | None:
    """(exp(logit_scale), logit_bias) of a SigLIP-style model as floats, read now (a model in
    training changes them), or None for a model without ``logit_bias`` (softmax CLIP)."""
    import torch

    logit_bias = getattr(model, "logit_bias", None)
    if logit_bias is None:
        return None
    with torch.no_grad():
        scale = float(model.logit_scale.detach().float().exp().reshape(-1)[0])
        bias = float(logit_bias.detach().float().reshape(-1)[0])
    return scale, bias


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items (``size`` < 1 means one slice)."""
    step = size if size > 0 else max(len(items), 1)
    for start in range(0, len(items), step):
        yield items[start : start + step]


def to_float32_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A detached fp32 numpy copy on the CPU, whatever the forward pass precision was."""
    import torch

    return tensor.detach().to(device="cpu", dtype=torch.float32, copy=True).numpy()


def calibrated_sigmoid(similarities: Any, scale: float, bias: float) -> np.ndarray:
    """SigLIP's pair probability: sigmoid(scale * cosine + bias), computed in fp64, given as fp32.

    ``scale`` is the already exponentiated logit scale.
    """
    import numpy as np

    logits = scale * np.asarray(similarities, dtype=np.float64) + bias
    # exp of a large negative logit overflows harmlessly to inf -> probability 0.
    with np.errstate(over="ignore"):
        probability = 1.0 / (1.0 + np.exp(-logits))
    return probability.astype(np.float32)


def short_detail(exc: BaseException, limit: int = 300) -> str:
    """An exception's message on one line, capped: libraries put the useful part on line 2+."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def shorten(text: str, limit: int = 80) -> str:
    """A one-line excerpt of ``text`` for messages."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "\u2026"


class TruncationLog:
    """Warns once per text that a tokenizer cut, and remembers which texts were cut."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.texts: set[str] = set()

    def report(self, text: str, n_tokens: int | None, limit: int) -> None:
        """Record a truncated text; the first time, warn naming it."""
        if text in self.texts:
            return
        self.texts.add(text)
        size = f"{n_tokens} tokens" if n_tokens is not None else "too many tokens"
        warnings.warn(
            f"{self.model_name}: text truncated to the model's {limit}-token context "
            f"({size}); only its beginning is scored: {shorten(text)!r}",
            TruncationWarning,
            stacklevel=3,
        )


class EmbeddingOutputs:
    """What every encoder backend shares: the texts it truncated, and its output arrays."""

    truncation: TruncationLog
    encode_texts: Callable[[list[str]], np.ndarray]  # provided by the backend class

    @property
    def truncated_texts(self) -> set[str]:
        """Texts that were longer than the context and were cut."""
        return self.truncation.texts

    def _empty(self) -> np.ndarray:
        """A [0, D] result for an empty input list (D read from one encoded text)."""
        import numpy as np

        return np.zeros((0, self.encode_texts([""]).shape[1]), dtype=np.float32)


def concat_rows(parts: list[np.ndarray]) -> np.ndarray:
    """Per-batch arrays joined into one contiguous fp32 array."""
    import numpy as np

    return np.ascontiguousarray(np.concatenate(parts, axis=0), dtype=np.float32)


HUB_PROBE_TIMEOUT = 2.0
"""Seconds to wait for the Hugging Face Hub before treating it as unreachable: one probe
instead of the hub client's retries (which took ~50 s to give up offline)."""


class HubProbe:
    """Whether each Hugging Face endpoint answered, asked once.

    Lifetime: the process (``HUB_PROBE``): every model spec of every session in it asks, and
    waiting up to ``HUB_PROBE_TIMEOUT`` seconds each time would add up."""

    def __init__(self) -> None:
        self._answers: dict[str, str | None] = {}

    def reason(self, endpoint: str, timeout: float) -> str | None:
        """Why ``endpoint`` cannot be reached (None: it answered), probed on first ask."""
        if endpoint not in self._answers:
            self._answers[endpoint] = _probe(endpoint, timeout)
        return self._answers[endpoint]


HUB_PROBE = HubProbe()
"""The process's hub probe (made at import)."""


def hub_unreachable_reason(timeout: float = HUB_PROBE_TIMEOUT) -> str | None:
    """Why the Hugging Face Hub cannot be used now (offline mode set, or no answer within
    ``timeout`` seconds), or None when it answers. Probed once per process."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return "huggingface_hub is not installed"
    if getattr(constants, "HF_HUB_OFFLINE", False):
        return "HF_HUB_OFFLINE is set"
    endpoint = str(getattr(constants, "ENDPOINT", "https://huggingface.co"))
    return HUB_PROBE.reason(endpoint, timeout)


def _probe(url: str, timeout: float) -> str | None:
    """One HEAD request in a daemon thread, so a hanging DNS lookup cannot stall us."""
    import threading
    import urllib.error
    import urllib.request

    outcome: list[str | None] = []

    def ask() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout)
            outcome.append(None)
        except urllib.error.HTTPError:
            outcome.append(None)  # it answered: reachable, whatever the status
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            outcome.append(f"{url} cannot be reached ({short_detail(reason, 120)})")

    thread = threading.Thread(target=ask, daemon=True, name="vlcheck-hub-probe")
    thread.start()
    thread.join(timeout + 0.5)
    return outcome[0] if outcome else f"{url} did not answer within {timeout:g} s"


def hub_cache_dir() -> str:
    """Where the Hugging Face Hub keeps downloads (``HF_HUB_CACHE`` / ``HF_HOME``)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return "~/.cache/huggingface/hub"
    return str(constants.HF_HUB_CACHE)


@contextmanager
def hub_offline() -> Iterator[None]:
    """Run a load with the hub client in offline mode: cached files only, no network calls."""
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before
