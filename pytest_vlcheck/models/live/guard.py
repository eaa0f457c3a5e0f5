"""The guard around every forward pass through a caller's live model (``models.live``).

A training loop calls the evaluation between optimizer steps, so scoring must leave the
model exactly as it found it: gradients off (``torch.no_grad``, not ``inference_mode``,
whose tensors a lazily built buffer would keep and training would then refuse), eval mode
for the pass and every module's own train/eval flag back afterwards, and the global random
number generators (torch CPU and CUDA, numpy, ``random``) restored, so evaluating does not
change the training run's dropout or data order. The model is never moved or cast; a lower
``--vl-precision`` runs on a cast copy (``live_precision``), guarded the same way.
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.batching import device_batch_size
from pytest_vlcheck.models.devices import effective_precision, torch_dtype
from pytest_vlcheck.models.live.precision import CastCopy
from pytest_vlcheck.models.protocol import ModelOptions


@contextmanager
def live_forward(model: Any) -> Iterator[None]:
    """Run the body with ``model`` in eval mode, without gradients; restore the flags and
    RNG states on the way out."""
    import torch

    modes = [(module, module.training) for module in model.modules()]
    states = _rng_states(torch)
    try:
        model.eval()
        with torch.no_grad():
            yield
    finally:
        # Set each flag directly: module.train(flag) would also overwrite its children's.
        for module, training in modes:
            module.training = training
        _restore_rng_states(torch, states)


def _rng_states(torch: Any) -> dict[str, Any]:
    states: dict[str, Any] = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    numpy = sys.modules.get("numpy")  # only a numpy someone imported can have a state to keep
    if numpy is not None:
        states["numpy"] = numpy.random.get_state()
    return states


def _restore_rng_states(torch: Any, states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    random.setstate(states["random"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])
    if "numpy" in states:
        sys.modules["numpy"].random.set_state(states["numpy"])


def run_settings(model: Any, options: ModelOptions) -> dict[str, Any]:
    """Where and how the model runs: its own device (it is never moved, so ``options.device``
    does not apply) and dtype; when ``options.precision`` asks for less than the model holds,
    on a copy of its weights cast once for the call (``live_precision.CastCopy``): the
    encoder is given ``model`` from here, not the caller's."""
    import torch

    floating = [p for p in model.parameters() if p.is_floating_point()]
    if not floating:
        raise VlcheckUserError(
            f"model: the {type(model).__name__} has no floating-point parameters; "
            "expected a model with weights"
        )
    device, dtype = floating[0].device, floating[0].dtype
    precision = effective_precision(options.precision, str(device))
    wanted = torch_dtype(precision)
    lower = wanted != torch.float32 and dtype == torch.float32
    runs = CastCopy(model, wanted) if lower else model
    return {
        "model": runs,
        "device": str(device),
        "dtype": wanted if lower else dtype,
        "batch_size": device_batch_size(options, str(device)),
        "forward_context": functools.partial(live_forward, runs),
        "precision": precision if lower else str(dtype).removeprefix("torch."),
    }
