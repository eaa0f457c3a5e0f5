"""How a run measured (precision, device, batch size, library versions): saved with each
baseline entry, and compared by the gate, which warns when they differ."""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

from pytest_vlcheck.models.backends.vqa_prompt import VqaPrompt
from pytest_vlcheck.models.devices import computed_precision
from pytest_vlcheck.models.protocol import ModelOptions

__all__ = ["run_conditions"]


def run_conditions(options: ModelOptions) -> dict[str, Any]:
    """How a run measured: the precision computed in (fp16 on the CPU is fp32), the device
    asked for, batch size, what a generative model is asked (None: the default VQAScore
    question), ``decode: gpu`` when images are decoded on the device (absent for the
    default CPU decoding, so runs and baselines from before the option compare equal) and
    library versions (read from the installed metadata, so nothing heavy is imported)."""
    conditions: dict[str, Any] = {
        "precision": computed_precision(options.precision, options.device),
        "device": options.device,
        "batch_size": "auto" if options.auto_batch else options.batch_size,
        "vqa": None if options.vqa == VqaPrompt() else options.vqa.describe(),
    }
    if options.decode != "cpu":
        conditions["decode"] = options.decode
    conditions.update(_library_versions())
    return conditions


@functools.cache
def _library_versions() -> tuple[tuple[str, str | None], ...]:
    """(name, version) of torch, open_clip and transformers as installed (None: not
    installed). Read once per process: each read parses a package's metadata file, and a
    training loop's ``evaluate`` asks for every test of every call (0.15-0.25 s a call, most
    of an unchanged call's time); the versions a process has imported do not change under it."""
    versions: list[tuple[str, str | None]] = []
    for name, dist in (("torch", "torch"), ("open_clip", "open_clip_torch"), ("transformers",) * 2):
        try:
            versions.append((name, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            versions.append((name, None))
    return tuple(versions)
