"""A live model's fingerprint: a digest of the exact bits of every weight and buffer.

A model in training changes under us (optimizer steps, ``load_state_dict``, ``.data``
assignments, which torch's version counters miss), so the fingerprint is recomputed from
the tensors at each access, on each tensor's own device:

- On the CPU, sha256 reads the tensors' bytes in place (no copy), in slices of
  ``HOST_SLICE`` bytes hashed on several threads (hashlib releases the GIL), whose digests
  are joined in order. Measured on open_clip ViT-B-32 (``benchmarks/live_fingerprint.py``),
  this is the cheapest exact method there: any torch arithmetic over the bits must first
  widen the words, which moves more memory than sha256 reads.
- On an accelerator, copying the weights to the host to hash them would cost more than the
  hashing, so each tensor's bit pattern is read as integer words ``w`` (int32 where the
  byte count allows, no copy) and reduced on the device to two keyed sums
  ``sum_i w_i * k_i mod 2**64`` with fixed pseudo-random odd 64-bit keys ``k`` (int64
  arithmetic wraps, and wrapped sums do not depend on the reduction order). Two tensors
  that differ make the difference ``d`` of some word nonzero with ``|d| < 2**32``, so for
  random keys each sum collides with probability at most ``2**-33``, the two together at
  most ``2**-66``. Long tensors are cut into chunks of ``CHUNK`` words (the keys repeat per
  chunk, every chunk's sums are kept in order), so the keys take a fixed 64 MiB per
  device. Only the small tensor of sums crosses to the host.

A tensor sharded by FSDP2 (a ``DTensor``) is read whole (``full_tensor()``, which gathers it
from every rank: all ranks compute the fingerprint together), so a sharded model has the
checksum of the same weights unsharded. sha256 then joins every tensor's name, dtype, shape
and digest. The keys are fixed (derived
from ``KEY_SEED``), so one set of weights has one fingerprint in every process: weights that
a training run produces do not depend on them.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pytest_vlcheck.cores import usable_cores

CHUNK = 1 << 22
"""Words per chunk: the length of each key vector."""
KEY_SEED = 0x766C636865636B  # "vlcheck"
_KEY_ROWS = 2
_KEYS: dict[Any, Any] = {}  # torch.device -> int64 [_KEY_ROWS, CHUNK]
HOST_SLICE = 16 << 20
"""Bytes per sha256 job on the CPU: enough to amortise a thread hand-off."""
MAX_HASH_THREADS = 8


def weights_checksum(module: Any) -> str:
    """sha256 hex over the name, dtype, shape and bits of every tensor in
    ``module.state_dict()`` (parameters and buffers), in the state dict's order."""
    import torch

    described = hashlib.sha256()
    host_bytes: list[Any] = []  # uint8 views of the CPU tensors, hashed in place
    sums: dict[Any, list[Any]] = {}  # other device -> its tensors' keyed sums, in order
    with torch.no_grad():
        for name, tensor in module.state_dict(keep_vars=True).items():
            if not isinstance(tensor, torch.Tensor):  # extra state some modules keep
                described.update(f"{name}={tensor!r}\n".encode())
                continue
            whole = getattr(tensor, "full_tensor", None)  # a DTensor: FSDP2 shards
            if callable(whole):
                tensor = whole()  # collective: every rank reads the tensors in the same order
            described.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}\n".encode())
            if tensor.device.type == "cpu":
                host_bytes.append(_words(tensor.detach()).view(torch.uint8).numpy())
            else:
                sums.setdefault(tensor.device, []).append(_tensor_sums(tensor.detach()))
    for digest in _slice_digests(host_bytes):
        described.update(digest)
    for parts in sums.values():  # one copy to the host per device
        values = torch.cat(parts).cpu().tolist()
        described.update(struct.pack(f"<{len(values)}q", *values))
    return described.hexdigest()


def _slice_digests(arrays: Sequence[Any]) -> list[bytes]:
    """sha256 of consecutive ``HOST_SLICE``-byte slices of each array, in order."""
    slices = [
        memoryview(array)[start : start + HOST_SLICE]
        for array in arrays
        for start in range(0, max(array.nbytes, 1), HOST_SLICE)
    ]
    threads = min(MAX_HASH_THREADS, usable_cores(), len(slices))
    if threads <= 1:
        return [hashlib.sha256(piece).digest() for piece in slices]
    with ThreadPoolExecutor(threads, thread_name_prefix="vlcheck-fingerprint") as pool:
        return list(pool.map(lambda piece: hashlib.sha256(piece).digest(), slices))


def _tensor_sums(tensor: Any) -> Any:
    """int64 [chunks * _KEY_ROWS]: the keyed sums of the tensor's bit pattern, per chunk
    (the products of int32 words and int64 keys are int64, wrapping mod 2**64)."""
    import torch

    words = _words(tensor)
    keys = _keys(words.device)
    parts = [torch.zeros(0, dtype=torch.int64, device=words.device)]
    for start in range(0, words.numel(), CHUNK):
        piece = words[start : start + CHUNK]
        parts.append((piece * keys[:, : piece.numel()]).sum(dim=1))
    return torch.cat(parts)


def _words(tensor: Any) -> Any:
    """The tensor's bytes as a flat integer tensor (int32, int16 or uint8 words)."""
    import torch

    raw = tensor.contiguous().reshape(-1).view(torch.uint8)
    for dtype, size in ((torch.int32, 4), (torch.int16, 2)):
        if raw.numel() % size == 0:
            return raw.view(dtype)
    return raw


def _keys(device: Any) -> Any:
    """The odd 64-bit key rows on ``device``, made once per process and device."""
    import torch

    keys = _KEYS.get(device)
    if keys is None:
        generator = torch.Generator().manual_seed(KEY_SEED)  # not the global RNG
        cpu = torch.randint(
            -(2**63), 2**63 - 1, (_KEY_ROWS, CHUNK), dtype=torch.int64, generator=generator
        )
        keys = _KEYS[device] = (cpu | 1).to(device)
    return keys
