"""Short labels for images in reports: a scene's spec is JSON hundreds of characters long,
so a table header names what it shows ("scene: red circle, hollow blue star") instead; the
full description stays in the title (hover) and in ``matrix.json``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_LABEL = 80
_SCENE = "scene:"


def image_label(description: str) -> str:
    """At most ``MAX_LABEL`` characters: a scene by its visible objects (with any crop or
    perturbation after them), anything else as described (a file by its path)."""
    if not description.startswith(_SCENE):
        return _clipped(description)
    try:
        spec, end = json.JSONDecoder().raw_decode(description, len(_SCENE))
    except ValueError:
        return _clipped(description)
    objects = spec.get("objects", []) if isinstance(spec, Mapping) else []
    shown = [_object(o) for o in objects if isinstance(o, Mapping) and not o.get("hidden")]
    return _clipped(f"{_SCENE} {', '.join(shown) or 'no objects'}{description[end:]}")


def shorten_scenes(text: str) -> str:
    """``text`` with every ``scene:{...}`` spec in it replaced by the scene's short label (a
    failure's detail line names its images)."""
    out, start = [], 0
    while (at := text.find(_SCENE + "{", start)) >= 0:
        try:
            spec, end = json.JSONDecoder().raw_decode(text, at + len(_SCENE))
        except ValueError:
            break
        out += [text[start:at], image_label(_SCENE + json.dumps(spec))]
        start = end
    return "".join(out) + text[start:]


def _object(obj: Mapping[str, Any]) -> str:
    colour = obj.get("color", "")
    words = [
        "hollow" if obj.get("hollow") else "",
        colour if isinstance(colour, str) else "rgb" + str(tuple(colour)).replace(" ", ""),
        obj.get("texture", "") if obj.get("texture") not in (None, "solid") else "",
        str(obj.get("shape", "")),
    ]
    return " ".join(w for w in words if w)


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"
