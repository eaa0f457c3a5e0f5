"""A training job's model as the collective ``evaluate`` scores it.

- DDP (``DistributedDataParallel``, ``DataParallel``) and ``torch.compile`` wrap the model:
  their ``.module`` / ``._orig_mod`` is scored (the same weights; DDP's forward would sync
  buffers and wait for gradients no step computes).
- A model sharded with FSDP (``fully_shard``, or ``FullyShardedDataParallel`` around its
  towers) gathers each sharded module's weights in its forward, which every rank must run
  together: the ranks make the same number of forward calls per batch phase ("lockstep";
  a rank whose share is short encodes a dummy input). ``fully_shard`` on the root runs
  only ``forward`` with gathered weights, so ``encode_image``/``encode_text`` (open_clip) or
  ``get_image_features``/``get_text_features`` (transformers) are registered on the
  caller's module with ``register_fsdp_forward_method`` (once; documented).
- ``FullyShardedDataParallel`` around the root runs nothing but ``forward``; it is refused
  with what to do instead (wrap the towers, or ``fully_shard``).
"""

from __future__ import annotations

from typing import Any

from pytest_vlcheck.errors import VlcheckUserError

_ENCODERS = ("encode_image", "encode_text", "get_image_features", "get_text_features")
"""open_clip's and transformers' encoders: those the model has are registered."""
_REGISTERED = "_vlcheck_fsdp_methods"


def unwrapped(model: Any) -> Any:
    """The module inside DDP / DataParallel and ``torch.compile`` wrappers (any nesting)."""
    import torch

    while True:
        if isinstance(model, (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), torch.nn.Module):
            model = model._orig_mod
        else:
            return model


def sharded(model: Any) -> bool:
    """Whether any module of ``model`` is sharded by FSDP (its forward is collective);
    ``FullyShardedDataParallel`` around the root is refused (see the module doc)."""
    import torch
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel

    if not isinstance(model, torch.nn.Module):
        return False
    if isinstance(model, FullyShardedDataParallel):
        raise VlcheckUserError(
            "model: FullyShardedDataParallel around the whole model runs only its forward, "
            "not encode_image/encode_text; expected FSDP around the towers (model.visual, "
            "model.transformer), fully_shard, or the model under summon_full_params"
        )
    return any(isinstance(m, (FSDPModule, FullyShardedDataParallel)) for m in model.modules())


def register_encoders(model: Any) -> None:
    """Register the model's encoders as FSDP forward methods when ``fully_shard`` sharded its
    root, so that calling them gathers the root's weights (done once per module)."""
    from torch.distributed.fsdp import FSDPModule, register_fsdp_forward_method

    if not isinstance(model, FSDPModule) or getattr(model, _REGISTERED, False):
        return
    module: Any = model
    for method in _ENCODERS:
        if callable(getattr(module, method, None)):
            register_fsdp_forward_method(module, method)
            # torch's wrapper is bound with the bound method as its __wrapped__, so its
            # signature loses a parameter (transformers' backend reads the input names there)
            getattr(module, method).__func__.__wrapped__ = getattr(type(module), method)
    setattr(model, _REGISTERED, True)


def dummy_forward(scorer: Any, kind: str) -> None:
    """One forward call that matches a rank's real ones (a padding call in lockstep)."""
    if kind == "texts":
        scorer.encode_texts(["a"])
    else:
        from PIL import Image

        scorer.encode_images([Image.new("RGB", (8, 8))])
