"""The parts of an example every task kind parses the same way: images, tags and ids.

Task modules (``pytest_vlcheck.tasks``) parse their own keys with these, so an image reference
or a tag means the same thing in every kind and every error names ``FILE:LINE``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vlcheck.images.refs import Crop, ImageRef, canonical_scene
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.parsing.fields import Fields, number_text, type_name

_IMAGE_KEYS = ("path", "url", "scene", "crop", "crop_relative", "sha256")


@dataclass(frozen=True)
class ParseContext:
    """Where relative image paths of one checklist resolve."""

    path: Path
    image_dir: Path


def image_at(context: ParseContext, fields: Fields, key: str) -> ImageRef:
    """The image reference under ``key`` (required)."""
    if not fields.has(key):
        fields.fail(f"{fields.where} is missing the required key '{key}'")
    return parse_image(context, fields.raw(key), fields.line_of(key), f"'{key}'")


def image_list(
    context: ParseContext, fields: Fields, key: str, *, exact: int | None = None
) -> tuple[ImageRef, ...]:
    """The list of image references under ``key``, each located at its own line."""
    return tuple(
        parse_image(context, raw, fields.item_line(key, i), f"'{key}' item {i + 1}")
        for i, raw in enumerate(fields.items(key, exact=exact))
    )


def parse_image(context: ParseContext, raw: Any, line: int, what: str) -> ImageRef:
    """An image reference: a path, or a mapping with exactly one of path / url / scene."""
    if isinstance(raw, str):
        return _file_ref(context, raw, line, what, None, False)
    fields = Fields(context.path, raw, f"image {what}", line)
    fields.check_keys(_IMAGE_KEYS)
    sources = [key for key in ("path", "url", "scene") if fields.has(key)]
    if len(sources) != 1:
        fields.fail(f"image {what} needs exactly one of 'path', 'url' or 'scene'")
    crop, relative = _crop(fields)
    if sources == ["path"]:
        return _file_ref(context, fields.text("path"), fields.line_of("path"), what, crop, relative)
    if sources == ["url"]:
        url = fields.text("url", pattern=r"https?://\S+", expected="an http(s) URL")
        sha = fields.text("sha256", "") or None
        if sha is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
            fields.fail("'sha256' must be 64 hexadecimal digits", "sha256")
        return ImageRef("url", url, url, crop, relative, sha.lower() if sha else None)
    scene = fields.raw("scene")
    from pytest_vlcheck.images.scenes import validate_scene

    try:
        validate_scene(scene)
    except ValueError as exc:
        fields.fail(f"scene: {exc}", "scene")
    text = canonical_scene(scene)
    return ImageRef("scene", text, text, crop, relative)


def _file_ref(
    context: ParseContext, written: str, line: int, what: str, crop: Crop | None, relative: bool
) -> ImageRef:
    if not written.strip():
        raise ChecklistError(context.path, line, f"image {what} is an empty path")
    folder, name = os.path.split(os.path.abspath(os.path.join(context.image_dir, written)))
    return ImageRef("file", written, os.path.join(_real_dir(folder), name), crop, relative)


@functools.lru_cache(maxsize=4096)
def _real_dir(folder: str) -> str:
    """The real path of an absolute image folder, resolved once per folder (resolving each
    of 100k image paths costs seconds of ``lstat`` calls). Absolute, so a relative
    checklist read again after a change of directory is not given the old folder."""
    return os.path.realpath(folder)


def _crop(fields: Fields) -> tuple[Crop | None, bool]:
    if fields.has("crop") and fields.has("crop_relative"):
        fields.fail("give 'crop' (pixels) or 'crop_relative' (fractions), not both")
    key = "crop" if fields.has("crop") else "crop_relative" if fields.has("crop_relative") else ""
    if not key:
        return None, False
    values = fields.raw(key)
    if (
        not isinstance(values, list)
        or len(values) != 4
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
    ):
        fields.fail(f"'{key}' must be four numbers [x, y, width, height]", key)
    if not all(math.isfinite(v) for v in values):
        shown = ", ".join(number_text(v) for v in values)
        fields.fail(f"'{key}' is [{shown}]; expected four finite numbers", key)
    x, y, w, h = (float(v) for v in values)
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        fields.fail(f"'{key}' is {list(values)}; expected x, y >= 0 and width, height > 0", key)
    relative = key == "crop_relative"
    if relative and (x + w > 1 + 1e-6 or y + h > 1 + 1e-6):
        fields.fail(f"'crop_relative' is {list(values)}; the box must lie within [0, 1]", key)
    return (x, y, w, h), relative


def parse_tags(fields: Fields) -> dict[str, str]:
    """The example's ``tags`` mapping (name -> single value, as text)."""
    if not fields.has("tags"):
        return {}
    raw = fields.raw("tags")
    if not isinstance(raw, Mapping):
        fields.fail(f"'tags' must be a mapping of names to values, got {type_name(raw)}", "tags")
    tags = {}
    for key, value in raw.items():
        if not str(key).strip():
            fields.fail("a tag name is blank; expected names such as 'relation'", "tags")
        if isinstance(value, (list, Mapping)) or value is None:
            fields.fail(
                f"tag '{key}' must be a single value (text or number), got {type_name(value)}",
                "tags",
            )
        tags[str(key)] = _tag_text(value)
    return tags


def _tag_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def example_id(fields: Fields) -> str:
    """The example's own id, or one derived from its content (stable under reordering)."""
    if fields.has("id"):
        raw = fields.raw("id")
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            fields.fail(f"'id' must be a string or an integer, got {type_name(raw)}", "id")
        if not str(raw).strip():
            fields.fail("'id' is blank; expected a non-empty string or an integer", "id")
        return str(raw)
    content = json.dumps(fields.data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(content.encode("utf-8")).hexdigest()[:12]
