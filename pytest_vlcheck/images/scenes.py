"""Synthetic scenes: coloured shapes on a background, rendered deterministically.

A scene spec is a small mapping (the ``scene:`` value of a checklist image)::

    size: 224                   # square canvas in pixels, or [width, height]
    background: white           # colour name or [r, g, b]
    objects:                    # painted in order: later objects cover earlier ones
      - shape: circle           # one of SHAPES
        color: red              # colour name (COLORS) or [r, g, b]
        size: 0.3               # side of the object's square box, fraction of canvas width,
                                #   or a word of SIZE_WORDS
        position: [0.5, 0.5]    # centre of the box, fractions of width and height
        texture: solid          # optional, one of TEXTURES
        hollow: false           # optional: only the outline is painted (a "state" proxy)
        hidden: false           # optional: left out (occluded); the rest of the scene is
                                #   exactly as with it, so a directional test can compare

Why numpy instead of ``ImageDraw``: the same spec must give the same pixels on every
machine and Pillow version. Shapes are tested point by point on a supersampled grid with
plain IEEE float arithmetic (add, multiply, compare; no libm calls at render time), then
box-filtered down with integer arithmetic; Pillow only wraps the final array.

The module also computes VL-CheckList's location and size bins from an object's box.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PIL import Image

from pytest_vlcheck.lazy import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

Scene = Mapping[str, Any]
"""A scene spec as a checklist writes it (``validate_scene`` says its keys)."""
SceneObject = Mapping[str, Any]
"""One of a scene's ``objects`` (shape, color, size, position, texture, hollow, hidden)."""

DEFAULT_CANVAS = 224
SUPERSAMPLE = 4  # samples per pixel along each axis (16 per pixel)
MIN_CANVAS, MAX_CANVAS = 16, 2048

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "orange": (245, 130, 20),
    "yellow": (245, 215, 30),
    "green": (30, 150, 50),
    "blue": (30, 80, 220),
    "purple": (130, 50, 180),
    "pink": (245, 130, 190),
    "brown": (120, 72, 36),
    "black": (20, 20, 20),
    "white": (250, 250, 250),
    "gray": (128, 128, 128),
    "lightgray": (215, 215, 215),
    "beige": (238, 228, 200),
}
"""Every colour name a spec may use (objects and backgrounds)."""

OBJECT_COLORS: tuple[str, ...] = (
    "black",
    "blue",
    "brown",
    "gray",
    "green",
    "orange",
    "pink",
    "purple",
    "red",
    "white",
    "yellow",
)
"""Colour names with an everyday caption word; generators draw object colours from these."""

BACKGROUNDS: tuple[str, ...] = ("beige", "lightgray", "white")
"""Backgrounds generators use: light, so every object colour but white stands out."""

TEXTURES: tuple[str, ...] = ("solid", "striped", "dotted", "checkered")

SIZE_WORDS: dict[str, float] = {"small": 0.05, "medium": 0.12, "large": 0.3}
"""Size words in a spec, chosen so that on a square canvas ``size_bin`` gives the same word."""

# Reference image for VL-CheckList's pixel thresholds (see ``size_bin``).
REFERENCE_AREA = 640 * 480
SIZE_SMALL_PX, SIZE_MEDIUM_PX = 1024, 9216

_OBJECT_KEYS = ("shape", "color", "size", "position", "texture", "hollow", "hidden")
_SCENE_KEYS = ("size", "background", "objects")
HOLLOW_WIDTH = 0.16  # outline thickness of a hollow object, fraction of its side


def _normalised(points: Sequence[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Scale a polygon so its bounding box is exactly the unit square; round to 1e-6.

    Rounding makes the vertex table independent of the last bit of the platform's sin/cos.
    """
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, y0 = min(xs), min(ys)
    w, h = max(xs) - x0, max(ys) - y0
    return tuple((round((x - x0) / w, 6), round((y - y0) / h, 6)) for x, y in points)


def _regular(
    n: int, start_deg: float, radii: Sequence[float] = (1.0,)
) -> list[tuple[float, float]]:
    """Vertices of a regular (or, with two radii, star) polygon, y pointing down."""
    pts: list[tuple[float, float]] = []
    k = n * len(radii)
    for i in range(k):
        a = math.radians(start_deg + 360.0 * i / k)
        r = radii[i % len(radii)]
        pts.append((r * math.cos(a), r * math.sin(a)))
    return pts


def _heart() -> list[tuple[float, float]]:
    """A heart outline from the classic parametric curve, 48 vertices."""
    pts: list[tuple[float, float]] = []
    for i in range(48):
        t = 2 * math.pi * i / 48
        x = 16 * math.sin(t) ** 3
        y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
        pts.append((x, -y))
    return pts


_POLYGONS: dict[str, tuple[tuple[float, float], ...]] = {
    "triangle": _normalised([(0.5, 0.0), (1.0, 1.0), (0.0, 1.0)]),
    "diamond": _normalised([(0.5, 0.0), (1.0, 0.5), (0.5, 1.0), (0.0, 0.5)]),
    "hexagon": _normalised(_regular(6, 0.0)),
    "star": _normalised(_regular(5, -90.0, (1.0, 0.42))),
    "cross": _normalised(
        [
            (0.33, 0.0),
            (0.67, 0.0),
            (0.67, 0.33),
            (1.0, 0.33),
            (1.0, 0.67),
            (0.67, 0.67),
            (0.67, 1.0),
            (0.33, 1.0),
            (0.33, 0.67),
            (0.0, 0.67),
            (0.0, 0.33),
            (0.33, 0.33),
        ]
    ),
    "heart": _normalised(_heart()),
}

SHAPES: tuple[str, ...] = (
    "circle",
    "cross",
    "diamond",
    "heart",
    "hexagon",
    "square",
    "star",
    "triangle",
)
SHAPE_PLURALS: dict[str, str] = {s: ("crosses" if s == "cross" else s + "s") for s in SHAPES}


def scene_schema() -> dict[str, Any]:
    """The JSON Schema of a scene spec, from the same constants ``validate_scene`` checks."""
    colour = {
        "oneOf": [
            {"enum": list(COLORS)},
            {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 255},
                "minItems": 3,
                "maxItems": 3,
            },
        ],
        "description": "a colour name or [r, g, b] (integers 0-255)",
    }
    pixels = {"type": "integer", "minimum": MIN_CANVAS, "maximum": MAX_CANVAS}
    fraction = {"type": "number", "minimum": 0, "maximum": 1}
    obj = {
        "type": "object",
        "properties": {
            "shape": {"enum": list(SHAPES)},
            "color": colour,
            "size": {
                "oneOf": [
                    {"type": "number", "exclusiveMinimum": 0, "maximum": 2},
                    {"enum": list(SIZE_WORDS)},
                ],
                "description": "side of the object's square box as a fraction of the canvas "
                f"width, or a word ({', '.join(f'{k} {v}' for k, v in SIZE_WORDS.items())})",
            },
            "position": {
                "type": "array",
                "items": fraction,
                "minItems": 2,
                "maxItems": 2,
                "description": "centre of the box: [x, y] as fractions of width and height",
            },
            "texture": {"enum": list(TEXTURES), "description": "default solid"},
            "hollow": {"type": "boolean", "description": "only the outline (default false)"},
            "hidden": {
                "type": "boolean",
                "description": "left out, the rest of the scene unchanged (default false)",
            },
        },
        "required": ["shape", "color", "size", "position"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "description": "a synthetic scene: shapes painted in order on a background",
        "properties": {
            "size": {
                "oneOf": [
                    pixels,
                    {"type": "array", "items": pixels, "minItems": 2, "maxItems": 2},
                ],
                "description": f"square canvas in pixels or [width, height] (default "
                f"{DEFAULT_CANVAS})",
            },
            "background": {**colour, "description": "a colour (default white)"},
            "objects": {"type": "array", "items": obj, "description": "painted in order"},
        },
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------- validation


def _fail(key: str, message: str) -> None:
    """Messages name the key path; the loader prefixes ``FILE:LINE: scene:``."""
    raise ValueError(f"{key}: {message}")


def _check_color(key: str, value: Any) -> None:
    if isinstance(value, str):
        if value not in COLORS:
            _fail(
                key, f"unknown colour {value!r}; expected one of {', '.join(COLORS)} or [r, g, b]"
            )
        return
    if (
        isinstance(value, (list, tuple))
        and len(value) == 3
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)
    ):
        return
    _fail(key, f"expected a colour name or [r, g, b] with integers 0-255, got {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_object(i: int, obj: Any) -> None:
    where = f"objects[{i}]"
    if not isinstance(obj, Mapping):
        _fail(where, f"expected a mapping with keys {', '.join(_OBJECT_KEYS)}, got {obj!r}")
    for key in obj:
        if key not in _OBJECT_KEYS:
            _fail(f"{where}.{key}", f"unknown key; expected one of {', '.join(_OBJECT_KEYS)}")
    for key in ("shape", "color", "size", "position"):
        if key not in obj:
            _fail(f"{where}.{key}", "missing; every object needs shape, color, size, position")
    if obj["shape"] not in SHAPES:
        _fail(
            f"{where}.shape", f"unknown shape {obj['shape']!r}; expected one of {', '.join(SHAPES)}"
        )
    _check_color(f"{where}.color", obj["color"])
    size = obj["size"]
    if isinstance(size, str):
        if size not in SIZE_WORDS:
            _fail(
                f"{where}.size",
                f"unknown size word {size!r}; expected one of {', '.join(SIZE_WORDS)} or a number",
            )
    elif not (_is_number(size) and 0 < size <= 2):
        _fail(f"{where}.size", f"expected a fraction of the canvas width in (0, 2], got {size!r}")
    pos = obj["position"]
    if not (
        isinstance(pos, (list, tuple))
        and len(pos) == 2
        and all(_is_number(p) and 0 <= p <= 1 for p in pos)
    ):
        _fail(
            f"{where}.position", f"expected [x, y], fractions of the canvas in [0, 1], got {pos!r}"
        )
    texture = obj.get("texture", "solid")
    if texture not in TEXTURES:
        _fail(
            f"{where}.texture",
            f"unknown texture {texture!r}; expected one of {', '.join(TEXTURES)}",
        )
    for flag in ("hollow", "hidden"):
        if not isinstance(obj.get(flag, False), bool):
            _fail(f"{where}.{flag}", f"expected true or false, got {obj[flag]!r}")


def validate_scene(spec: Scene) -> None:
    """Raise ValueError naming the first bad key and what it should be; silent when valid."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"expected a mapping with keys {', '.join(_SCENE_KEYS)}")
    for key in spec:
        if key not in _SCENE_KEYS:
            _fail(str(key), f"unknown key; expected one of {', '.join(_SCENE_KEYS)}")
    size = spec.get("size", DEFAULT_CANVAS)
    sizes = [size, size] if not isinstance(size, (list, tuple)) else list(size)
    if not (
        len(sizes) == 2
        and all(
            isinstance(s, int) and not isinstance(s, bool) and MIN_CANVAS <= s <= MAX_CANVAS
            for s in sizes
        )
    ):
        _fail(
            "size",
            f"expected an integer or [width, height] in pixels, "
            f"{MIN_CANVAS}-{MAX_CANVAS}, got {size!r}",
        )
    _check_color("background", spec.get("background", "white"))
    objects = spec.get("objects", [])
    if not isinstance(objects, (list, tuple)):
        _fail("objects", f"expected a list of objects, got {objects!r}")
    for i, obj in enumerate(objects):
        _check_object(i, obj)


# --------------------------------------------------------------------------- geometry


def canvas_size(spec: Scene) -> tuple[int, int]:
    """The canvas (width, height) in pixels."""
    size = spec.get("size", DEFAULT_CANVAS)
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[1])
    return int(size), int(size)


def _round(value: float) -> int:
    """Round half up: one rule on every platform (Python's round() is half-to-even)."""
    return math.floor(value + 0.5)


def _raw_box(obj: SceneObject, canvas: tuple[int, int]) -> tuple[int, int, int]:
    """The object's square box before clipping: x0, y0, side in integer pixels."""
    w, h = canvas
    size = obj["size"]
    frac = SIZE_WORDS[size] if isinstance(size, str) else float(size)
    side = max(1, _round(frac * w))
    cx, cy = float(obj["position"][0]) * w, float(obj["position"][1]) * h
    return _round(cx - side / 2), _round(cy - side / 2), side


def object_box(obj: SceneObject, canvas: tuple[int, int]) -> tuple[int, int, int, int]:
    """The object's bounding box (x, y, w, h) in pixels, clipped to the canvas.

    Every shape is scaled to touch all four sides of its square box, so this is the tight
    box of the painted pixels (what a detector's box annotation would be).
    """
    x0, y0, side = _raw_box(obj, canvas)
    x1, y1 = min(canvas[0], x0 + side), min(canvas[1], y0 + side)
    x0, y0 = max(0, x0), max(0, y0)
    return x0, y0, max(0, x1 - x0), max(0, y1 - y0)


def location_bin(box: Sequence[float], canvas: tuple[int, int]) -> str:
    """VL-CheckList's location bin: center, mid or margin.

    Reading of the paper: y is the distance from the box centre to the image centre and x
    is half the image diagonal, sqrt(w^2 + h^2) / 2; ``center`` when y/x <= 1/3, ``mid``
    when 1/3 < y/x <= 2/3, ``margin`` otherwise. The ratio is scale-free, so it applies to
    any canvas unchanged.
    """
    bx, by, bw, bh = box
    w, h = canvas
    dist = math.hypot(bx + bw / 2 - w / 2, by + bh / 2 - h / 2)
    ratio = dist / (math.hypot(w, h) / 2)
    if ratio <= 1 / 3:
        return "center"
    if ratio <= 2 / 3:
        return "mid"
    return "margin"


def size_bin(box: Sequence[float], canvas: tuple[int, int]) -> str:
    """VL-CheckList's size bin: small, medium or large, from the box area w*h.

    The paper uses absolute thresholds S=1024 and M=9216 px^2 (COCO's 32^2 and 96^2, defined
    on COCO-sized photos of about 640x480). A synthetic canvas is much smaller, so the
    thresholds are scaled by canvas area / (640*480): small when area <= S*k, medium when
    S*k < area <= M*k, large otherwise, k = W*H / 307200. On a 224x224 canvas that is
    about 167.25 and 1505.28 px^2 (boxes up to ~12.9 and ~38.8 px wide): the same share of the
    image as in the paper.
    """
    area = float(box[2]) * float(box[3])
    k = canvas[0] * canvas[1] / REFERENCE_AREA
    if area <= SIZE_SMALL_PX * k:
        return "small"
    if area <= SIZE_MEDIUM_PX * k:
        return "medium"
    return "large"


# --------------------------------------------------------------------------- rendering


def _rgb(value: Any) -> tuple[int, int, int]:
    if isinstance(value, str):
        return COLORS[value]
    return int(value[0]), int(value[1]), int(value[2])


def _secondary(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The pattern's second colour: a darker shade for light colours, lighter for dark."""
    luma = (299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2]) // 1000
    if luma >= 150:
        return tuple(c * 45 // 100 for c in rgb)  # type: ignore[return-value]
    return tuple(c + (255 - c) * 60 // 100 for c in rgb)  # type: ignore[return-value]


def _inside(shape: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Which unit-square points (u right, v down) lie inside the shape: ``u`` a row and ``v``
    a column of sample coordinates, broadcast to the grid (a polygon's edge is tested only on
    the rows it crosses)."""
    if shape == "circle":
        du, dv = u - 0.5, v - 0.5
        return du * du + dv * dv <= 0.25
    if shape == "square":
        return (u >= 0) & (u <= 1) & (v >= 0) & (v <= 1)
    poly = _POLYGONS[shape]
    inside = np.zeros(np.broadcast_shapes(u.shape, v.shape), dtype=bool)
    n = len(poly)
    for i in range(n):  # even-odd crossing test, one edge at a time
        (xa, ya), (xb, yb) = poly[i], poly[(i + 1) % n]
        if ya == yb:
            continue
        rows = np.flatnonzero((ya > v) != (yb > v))  # the rows the edge crosses; v: a column
        x_cross = xa + (v[rows] - ya) * ((xb - xa) / (yb - ya))
        inside[rows] ^= u < x_cross
    return inside


def _pattern(texture: str, u: np.ndarray, v: np.ndarray) -> npt.NDArray[np.bool_]:
    """True where a textured object shows its second colour (unit box coordinates)."""
    shown: npt.NDArray[np.bool_]
    if texture == "striped":  # diagonal bands, 7 across the box diagonal
        shown = np.floor((u + v) * 3.5).astype(np.int64) % 2 == 1
        return shown
    if texture == "checkered":  # 4 x 4 board
        shown = (np.floor(u * 4).astype(np.int64) + np.floor(v * 4).astype(np.int64)) % 2 == 1
        return shown
    if texture == "dotted":  # a dot in the middle of each cell of a 4 x 4 grid
        fu, fv = u * 4 - np.floor(u * 4) - 0.5, v * 4 - np.floor(v * 4) - 0.5
        shown = fu * fu + fv * fv <= 0.3 * 0.3
        return shown
    return np.zeros(np.broadcast_shapes(u.shape, v.shape), dtype=bool)


def _paint(
    region: np.ndarray, origin: tuple[int, int], obj: SceneObject, size: tuple[int, int]
) -> None:
    """Paint one object onto a supersampled region whose top-left pixel is ``origin``."""
    ss = SUPERSAMPLE
    x0, y0, side = _raw_box(obj, size)
    ox, oy = origin
    rows, cols = region.shape[0], region.shape[1]
    # Sample rows/cols of the region that fall inside the box (the region is on the canvas).
    c0, c1 = max(0, (x0 - ox) * ss), min(cols, (x0 + side - ox) * ss)
    r0, r1 = max(0, (y0 - oy) * ss), min(rows, (y0 + side - oy) * ss)
    if c0 >= c1 or r0 >= r1:
        return
    # Sample centres in unit box coordinates: (index + 0.5) / ss pixels from the box corner.
    u = ((np.arange(c0, c1, dtype=np.float64) + 0.5) / ss + (ox - x0)) / side
    v = ((np.arange(r0, r1, dtype=np.float64) + 0.5) / ss + (oy - y0)) / side
    uu, vv = u[np.newaxis, :], v[:, np.newaxis]  # broadcast: the same values as a full grid
    shape = obj["shape"]
    mask = _inside(shape, uu, vv)
    if obj.get("hollow", False):
        t = HOLLOW_WIDTH
        scale = 1.0 - 2.0 * t
        mask &= ~_inside(shape, (uu - t) / scale, (vv - t) / scale)
    primary = _packed(_rgb(obj["color"]))
    box = region[r0:r1, c0:c1]
    texture = obj.get("texture", "solid")
    if texture == "solid":
        box[mask] = primary
        return
    second = _pattern(texture, uu, vv)
    box[mask & ~second] = primary
    box[mask & second] = _packed(_secondary(_rgb(obj["color"])))


def _packed(rgb: tuple[int, int, int]) -> np.uint64:
    """A colour as one sample of the supersampled region: each channel in its own 16-bit
    lane, so that summing a pixel's samples sums each channel apart (at most 16 x 255, far
    from a lane's 65,535) and painting writes one number per sample instead of three."""
    red, green, blue = rgb
    return np.uint64(red | green << _LANE | blue << 2 * _LANE)


_LANE = 16


def render_scene(spec: Scene) -> Image.Image:
    """Render a scene spec to an RGB image (validated first). Same spec, same pixels."""
    validate_scene(spec)
    w, h = canvas_size(spec)
    background = _rgb(spec.get("background", "white"))
    pixels = np.empty((h, w, 3), dtype=np.uint8)
    pixels[:, :] = background
    objects = [o for o in spec.get("objects", []) if not o.get("hidden", False)]
    boxes = [b for b in (object_box(o, (w, h)) for o in objects) if b[2] > 0 and b[3] > 0]
    # Only the rectangles covering overlapping objects are supersampled; the rest is
    # background. A sample's coordinates do not depend on which rectangle holds it (the
    # supersampling factor is a power of two), so the pixels equal those of one rectangle
    # over every object.
    for left, top, right, bottom in _clusters(boxes):
        pixels[top:bottom, left:right] = _supersampled(
            objects, (left, top, right, bottom), background, (w, h)
        )
    return Image.fromarray(pixels)


def _clusters(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Disjoint rectangles (left, top, right, bottom) covering the boxes: boxes that overlap
    share one, so every pixel's samples see every object that covers it."""
    rects = [(x, y, x + bw, y + bh) for x, y, bw, bh in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(rects)):
            for j in range(i + 1, len(rects)):
                a, b = rects[i], rects[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    rects[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del rects[j]
                    merged = True
                    break
            if merged:
                break
    return rects


def _supersampled(
    objects: list[SceneObject],
    rect: tuple[int, int, int, int],
    background: tuple[int, int, int],
    size: tuple[int, int],
) -> np.ndarray:
    """The pixels of ``rect`` with every object painted in order at ``SUPERSAMPLE`` squared
    samples per pixel, each pixel the mean of its samples rounded half up, in integers."""
    ss = SUPERSAMPLE
    left, top, right, bottom = rect
    height, width = bottom - top, right - left
    region = np.full((height * ss, width * ss), _packed(background), dtype=np.uint64)
    for obj in objects:
        _paint(region, (left, top), obj, size)
    # Box filter: add each pixel's ss rows of samples, then its ss columns (adds of whole
    # rows and strided columns: much faster than a multi-axis reduce).
    rows = region.reshape(height, ss, width * ss)
    sums = rows[:, 0].copy()
    for i in range(1, ss):
        sums += rows[:, i]
    columns = sums.reshape(height, width, ss)
    sums = columns[:, :, 0] + _packed((ss * ss // 2,) * 3)  # + half the count: rounds half up
    for j in range(1, ss):
        sums += columns[:, :, j]
    lanes = [(sums >> np.uint64(_LANE * c)) & np.uint64(0xFFFF) for c in range(3)]
    return (np.stack(lanes, axis=-1) // (ss * ss)).astype(np.uint8)


def occluded(spec: Scene, index: int) -> dict[str, Any]:
    """``spec`` with object ``index`` hidden: the same scene without that object."""
    objects = [dict(o) for o in spec["objects"]]
    objects[index]["hidden"] = True
    return {**spec, "objects": objects}


@functools.lru_cache(maxsize=256)
def _render_cached(location: str) -> Image.Image:
    return render_scene(json.loads(location))


def render_canonical(location: str) -> Image.Image:
    """Render a scene given as canonical JSON (``ImageRef.location``), cached by that text.

    Returns a copy so a caller that draws on the image cannot change the cache.
    """
    return _render_cached(location).copy()


def pixel_digest(image: Image.Image) -> str:
    """SHA-256 of an image's mode, size and raw pixels: what determinism tests compare."""
    import hashlib

    digest = hashlib.sha256(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()
