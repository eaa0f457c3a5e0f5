"""Capability tests written in Python: examples given as Python values become a
``ChecklistTest`` through the checklist loader's own parsing path.

A Python example is the mapping a checklist would hold, except that an image may also be a
``pathlib.Path`` or a PIL image. PIL images are saved once, named by their pixels' SHA-256, so
they go through the engine like any file (dedup, batching, cache) and equal pixels are one
image. Example ids and the test's content hash are computed from a stable stand-in
(``pil:sha256:HEX``) so that they do not depend on where the pixels were saved.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_vlcheck.atomic import atomic_write_bytes
from pytest_vlcheck.checklist.loader import _content_hash, _parse_test
from pytest_vlcheck.checklist.schema import ChecklistTest
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.parsing.example_fields import ParseContext, example_id, parse_image
from pytest_vlcheck.parsing.fields import Fields

PIL_PREFIX = "pil:sha256:"


class PixelStore:
    """Where PIL images handed to ``vl_model`` are saved (PNG, named by content)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, image: Any) -> tuple[str, str]:
        """(the saved file's absolute path, the stable stand-in naming the pixels).

        A palette image's bytes are indices into its palette, so it is named by its colours.
        """
        pixels = image.convert("RGBA") if image.mode in ("P", "PA") else image
        digest = hashlib.sha256(
            f"{pixels.mode}:{pixels.width}x{pixels.height}:".encode() + pixels.tobytes()
        ).hexdigest()
        path = self.directory / f"{digest[:32]}.png"
        if not path.exists():
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, buffer.getvalue())
        return str(path), PIL_PREFIX + digest


def is_pil(value: Any) -> bool:
    """A PIL image (duck-typed: PIL is imported only where images are decoded)."""
    return hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "save")


def resolve_values(value: Any, store: PixelStore) -> tuple[Any, Any]:
    """(``value`` with every PIL image and path object replaced by a path string, the same
    with PIL images named by their pixels instead): what the loader parses, and what ids
    and content hashes are computed from."""
    if is_pil(value):
        return store.save(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value), os.fspath(value)
    if isinstance(value, Mapping):
        pairs = {key: resolve_values(item, store) for key, item in value.items()}
        return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}
    if isinstance(value, (list, tuple)):
        pairs_list = [resolve_values(item, store) for item in value]
        return [v[0] for v in pairs_list], [v[1] for v in pairs_list]
    return value, value


def image_refs(
    images: Sequence[Any], context: ParseContext, line: int, store: PixelStore
) -> list[ImageRef]:
    """Image references from paths, PIL images or checklist image references (scene,
    crop, URL mappings), parsed as a checklist's ``image`` key is."""
    return [
        parse_image(context, resolve_values(raw, store)[0], line, f"images item {i + 1}")
        for i, raw in enumerate(images)
    ]


def build_test(
    context: ParseContext,
    line: int,
    store: PixelStore,
    *,
    key: str,
    name: str,
    task: str,
    capability: str,
    threshold: float,
    examples: Sequence[Mapping[str, Any]],
    settings: Mapping[str, Any],
) -> ChecklistTest:
    """A checklist test from Python values: ``name`` (a test id) names it in errors, ``key``
    is its id in results and baselines. Errors are ``ChecklistError`` at ``FILE:LINE``."""
    parsed, stable = [], []
    for index, raw in enumerate(examples):
        loaded, standin = resolve_values(raw, store)
        if isinstance(loaded, dict) and "id" not in loaded:
            where = f"example {index + 1} of test '{name}'"
            loaded["id"] = example_id(Fields(context.path, standin, where, line))
        parsed.append(loaded)
        stable.append(standin)
    head = {"id": name, "capability": capability, "task": task, "threshold": threshold}
    raw_test = {**head, **settings, "examples": parsed}
    test = _parse_test(context, raw_test, line)
    content_hash = _content_hash({**head, **settings, "examples": stable})
    return replace(test, id=key, content_hash=content_hash)
