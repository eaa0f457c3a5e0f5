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

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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
