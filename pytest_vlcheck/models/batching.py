"""Encoding in batches, shared by the torch backends: batch sizes (halved when the GPU runs
out of memory), the outputs' fp32 rows, truncated texts, SigLIP's calibrated sigmoid.

torch is imported inside the functions that need it, so importing this module stays cheap
(the plugin imports backend modules at collection time without loading a model).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_vlcheck.models.protocol import ModelOptions

if TYPE_CHECKING:
    import numpy as np
    import torch

T = TypeVar("T")

ForwardContext = Callable[[], AbstractContextManager[Any]]
"""What an encoder enters around its forward passes: ``inference_context`` for a model the
backend built itself, the live guard (``models.live.guard``) for a caller's model."""


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
