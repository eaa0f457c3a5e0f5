"""Device and precision choice for the torch backends: ``--vl-device`` and
``--vl-precision`` turned into what this machine can run.

torch is imported inside the functions that need it, so importing this module stays cheap.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.errors import DeviceError
from pytest_vlcheck.models.protocol import PRECISIONS

if TYPE_CHECKING:
    import torch


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
    bf16 is kept on the CPU, as asked (a bf16 baseline stays comparable), with a warning
    where the CPU has no bfloat16 instructions (``warn_emulated_bf16``); bf16 on a GPU
    without bf16 support is an error.
    """
    check_precision(precision)
    if computed_precision(precision, device) != precision:
        warnings.warn(
            "precision fp16 is not supported on the CPU; running in fp32 instead",
            UserWarning,
            stacklevel=2,
        )
        return "fp32"
    if precision == "bf16" and device.split(":")[0] == "cpu":
        warn_emulated_bf16()
    if precision == "bf16" and device.split(":")[0] == "cuda":
        import torch

        if not torch.cuda.is_bf16_supported():
            raise DeviceError(
                f"precision 'bf16' (--vl-precision) is not supported on {device} (this GPU "
                "has no bfloat16); expected fp16 or fp32"
            )
    return precision


def warn_emulated_bf16() -> None:
    """Warn that bf16 on this CPU is emulated: an x86 CPU without AVX512-BF16 or AMX has no
    bfloat16 arithmetic, and torch widens every operand instead (a 512x512 matmul ran 66x
    slower than in fp32, a 224-px ViT's forward passes about 70x, on this project's AVX2
    machine). Other CPUs (Arm) are not probed."""
    if _bf16_emulated():
        warnings.warn(
            "precision bf16 on this CPU runs about 50-70x slower than fp32: it has no bfloat16 "
            "instructions (AVX512-BF16 or AMX), so torch emulates them; expected fp32 here, or "
            "bf16 on a GPU",
            UserWarning,
            stacklevel=3,
        )


@functools.cache
def _bf16_emulated() -> bool:
    """Whether this x86 CPU lacks the bfloat16 instructions, probed once per process (a
    training loop's ``evaluate`` asks at every call); False where torch cannot tell."""
    import platform

    import torch

    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return False
    probes: list[Callable[[], bool] | None] = [
        getattr(torch.cpu, name, None) for name in _NATIVE_BF16_PROBES
    ]
    native = [probe() for probe in probes if probe is not None]
    return len(native) == len(probes) and not any(native)


_NATIVE_BF16_PROBES = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
"""torch.cpu's (private) probes of the x86 instructions that compute in bfloat16."""


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


def inference_context() -> AbstractContextManager[Any]:
    """``torch.inference_mode()``: the cheapest no-grad mode, for models no one trains."""
    import torch

    return torch.inference_mode()
