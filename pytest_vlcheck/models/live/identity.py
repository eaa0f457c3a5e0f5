"""What identifies a live model's scores: the text of what besides the weights decides them
(``live_identity``) and the fingerprint that adds the weights' current bits
(``live_fingerprint``), shared by the dual-encoder and the VQA live scorers."""

from __future__ import annotations

import re
from typing import Any

from pytest_vlcheck.models.live.fingerprint import weights_checksum

FINGERPRINT_PREFIX = "live:"


def live_fingerprint(identity: str, model: Any) -> str:
    """``live:`` + sha256 of the identity, the model's repr and the keyed checksum of its
    current weights and buffers."""
    import hashlib

    digest = hashlib.sha256(identity.encode("utf-8"))
    digest.update(_without_addresses(repr(model)).encode("utf-8"))
    digest.update(weights_checksum(model).encode("ascii"))
    return FINGERPRINT_PREFIX + digest.hexdigest()


def live_identity(model: Any, precision: str, *parts: Any) -> str:
    """What besides the weights decides the embeddings: the model class, the precision, the
    preprocessing and tokenizer (their reprs, or their attributes when the repr says nothing)."""
    described = [f"{type(model).__module__}.{type(model).__qualname__}", precision]
    described += [_describe(part) for part in parts]
    return "\n".join(described)


def _describe(part: Any) -> str:
    if isinstance(part, str):
        return part
    text = repr(part)
    if " at 0x" in text:  # the default object repr: name the settings instead
        settings = {
            key: value
            for key, value in sorted(getattr(part, "__dict__", {}).items())
            if isinstance(value, (bool, int, float, str, tuple))
        }
        text = f"{type(part).__module__}.{type(part).__qualname__}{settings}"
    return _without_addresses(text)


def _without_addresses(text: str) -> str:
    """Object addresses differ per process and say nothing about what a model computes."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)
