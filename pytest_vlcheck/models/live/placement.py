"""Where and how a caller's live model runs (``Placement``), and what every live scorer's
encoder is built with (``Placement.encoder``).

The model is never moved, so it runs on its own device and dtype (``options.device`` does
not apply); when ``options.precision`` asks for less than the model holds, it runs on a copy
of its weights cast once for the call (``live.precision.CastCopy``), so the encoder is given
``Placement.model``, not the caller's. Every forward pass enters the live guard.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, TypedDict

from pytest_vlcheck.errors import VlcheckUserError
from pytest_vlcheck.models.batching import ForwardContext, device_batch_size
from pytest_vlcheck.models.devices import effective_precision, torch_dtype
from pytest_vlcheck.models.live.guard import live_forward
from pytest_vlcheck.models.live.precision import CastCopy
from pytest_vlcheck.models.protocol import ModelOptions


class EncoderPlacement(TypedDict):
    """The keywords a live model's encoder (``OpenClipScorer``, ``HfDualScorer``,
    ``VqaScorer``) takes about its name and placement; its dtype goes by the encoder's own
    keyword."""

    name: str
    fingerprint: str
    model: Any
    device: str
    batch_size: int
    forward_context: ForwardContext


@dataclass(frozen=True)
class Placement:
    """``model`` is what the encoder runs (the caller's model, or its cast copy), on
    ``device`` in ``dtype`` (a ``torch.dtype``), ``batch_size`` inputs at a time;
    ``precision`` is what the run computes in, as the model identity records it."""

    model: Any
    device: str
    dtype: Any
    batch_size: int
    precision: str

    def encoder(self, name: str) -> EncoderPlacement:
        """The encoder's keywords: ``name``, no fingerprint (the live scorer computes its
        own at each access) and the live guard around every forward pass."""
        return EncoderPlacement(
            name=name,
            fingerprint="",
            model=self.model,
            device=self.device,
            batch_size=self.batch_size,
            forward_context=functools.partial(live_forward, self.model),
        )


def place(model: Any, options: ModelOptions) -> Placement:
    """Where and how ``model`` runs under ``options`` (see the module docstring)."""
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
    return Placement(
        model=CastCopy(model, wanted) if lower else model,
        device=str(device),
        dtype=wanted if lower else dtype,
        batch_size=device_batch_size(options, str(device)),
        precision=precision if lower else str(dtype).removeprefix("torch."),
    )
