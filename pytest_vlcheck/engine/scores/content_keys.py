"""Content keys for the embedding cache: equal content gives an equal key wherever it lives.

Keys depend on what a model sees, never on where a checkout sits: a file image is keyed by
the sha256 of its bytes (plus its crop), so a cache restored on another machine, or a copy
of the images under another root, is still valid, and a file changed at the same path gets
a new key. Hashing goes through a ``Digest`` (``EmbeddingCache.file_digest`` in a run, which
remembers unchanged files by stat; plain ``sha256_file`` without a cache).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.models.hashing import sha256_file
from pytest_vlcheck.models.protocol import Digest

KINDS = ("image", "text", "pair", "nll", "meta")


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_key(text: str) -> str:
    """sha256 hex of the UTF-8 text (texts are encoded exactly as written)."""
    return _sha256_text(text)


def image_key(ref: ImageRef, digest: Digest = sha256_file) -> str:
    """sha256 hex over the image's content identity, its crop and its perturbation.

    Files: the sha256 of their bytes (a missing or unreadable file raises
    ``ImageUnavailable``, as loading it would). Scenes: their canonical JSON. URLs: the URL
    and, when the checklist pins it, the sha256 of the download.
    """
    if ref.kind == "file":
        try:
            source = "file:" + digest(Path(ref.location))
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
            reason = getattr(exc, "strerror", None) or exc
            raise ImageUnavailable(f"cannot read {ref.location}: {reason}") from None
    elif ref.kind == "url":
        source = f"url:{ref.location}#{ref.sha256 or ''}"
    else:
        source = "scene:" + ref.location
    crop = None if ref.crop is None else [float(v) for v in ref.crop]
    parts: list[str | list[float] | bool | None] = [source, crop, ref.crop_relative]
    if ref.perturb is not None:  # other pixels, other key (unperturbed keys stay as they were)
        parts.append(ref.perturb.canonical())
    identity = json.dumps(parts, separators=(",", ":"))
    return _sha256_text(identity)


def pair_key(image: str, text: str) -> str:
    """Key of one (image, text) score of a cross-encoder, from the two content keys."""
    return _sha256_text(f"{image}|{text}")


def namespace(model_fingerprint: str, preprocessing: str, kind: str) -> str:
    """Which model, preprocessing and kind (``image``, ``text``, ``pair``, ``nll``; ``meta``
    for what the engine remembers of the model) made a vector; an empty fingerprint cannot
    name weights, so it is refused."""
    if kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not model_fingerprint:
        raise ValueError("a model without a fingerprint cannot use the embedding cache")
    return f"{kind}|{model_fingerprint}|{preprocessing}"
