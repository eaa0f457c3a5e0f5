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
from collections.abc import Callable
from pathlib import Path

from pytest_vlcheck.engine.embedding_cache import sha256_file
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable

# The member list and the hub-blob rule are fingerprint_path's own, so the values agree.
from pytest_vlcheck.models.torch_utils import _fingerprint_members, _is_sha256_hex

Digest = Callable[[Path], str]
"""sha256 hex of a file's bytes."""

KINDS = ("image", "text", "pair", "nll")


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
        except OSError as exc:
            raise ImageUnavailable(f"cannot read {ref.location}: {exc.strerror or exc}") from None
    elif ref.kind == "url":
        source = f"url:{ref.location}#{ref.sha256 or ''}"
    else:
        source = "scene:" + ref.location
    crop = None if ref.crop is None else [float(v) for v in ref.crop]
    parts: list = [source, crop, ref.crop_relative]
    if ref.perturb is not None:  # other pixels, other key (unperturbed keys stay as they were)
        parts.append(ref.perturb.canonical())
    identity = json.dumps(parts, separators=(",", ":"))
    return _sha256_text(identity)


def pair_key(image: str, text: str) -> str:
    """Key of one (image, text) score of a cross-encoder, from the two content keys."""
    return _sha256_text(f"{image}|{text}")


def namespace(model_fingerprint: str, preprocessing: str, kind: str) -> str:
    """Which model, preprocessing and kind (``image``, ``text``, ``pair``, ``nll``) made a
    vector; an empty fingerprint cannot name weights, so it is refused."""
    if kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not model_fingerprint:
        raise ValueError("a model without a fingerprint cannot use the embedding cache")
    return f"{kind}|{model_fingerprint}|{preprocessing}"


def file_fingerprint(path: str | Path, digest: Digest = sha256_file) -> str:
    """The same value as ``models.torch_utils.fingerprint_path`` (a drop-in), but each file is
    hashed through ``digest``, so with ``EmbeddingCache.file_digest`` an unchanged 600 MB
    checkpoint is read once, not on every run."""
    target = Path(path)
    if target.is_file():
        return _weights_digest(target, digest)
    if not target.is_dir():
        raise FileNotFoundError(f"cannot fingerprint {str(path)!r}: no such file or directory")
    combined = hashlib.sha256()
    for rel in _fingerprint_members(target):
        combined.update(rel.encode("utf-8"))
        combined.update(b"\0")
        combined.update(_weights_digest(target / rel, digest).encode("ascii"))
        combined.update(b"\n")
    return combined.hexdigest()


def _weights_digest(path: Path, digest: Digest) -> str:
    real = path.resolve()
    # A Hugging Face cache blob is named by the sha256 of its content: no need to read it.
    is_blob = real.parent.name == "blobs" and _is_sha256_hex(real.name)
    return real.name if is_blob else digest(real)
