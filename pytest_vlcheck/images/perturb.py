"""Seeded image perturbations that should not change what an image shows.

An invariance test (``tasks/invariance.py``) asks whether a model's choice among captions
survives JPEG compression, a resize, a small crop, a small rotation, a brightness change,
pixel noise or (only where the test says it keeps the meaning) a horizontal flip. A
perturbation travels inside an ``ImageRef`` and is part of its key, so the engine dedups,
caches and loads perturbed images like any other; the loader applies it after decoding and
cropping.

Random draws (a crop's offset, an angle, a brightness factor, noise) come from a seed derived
with SHA-256 from the example id, the perturbation's place and its ``seed`` (``derive_seed``),
never from Python's salted ``hash()``, so every process draws the same pixels.
"""

from __future__ import annotations

import hashlib
import io
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image


@dataclass(frozen=True)
class Bounds:
    """What a kind's amount means, its default and the range that keeps it small."""

    meaning: str
    default: float
    low: float
    high: float
    seeded: bool
    whole: bool = False


KINDS: dict[str, Bounds] = {
    "jpeg": Bounds("JPEG quality", 30, 5, 95, seeded=False, whole=True),
    "resize": Bounds("scale factor of each side", 0.5, 0.1, 1.0, seeded=False),
    "crop": Bounds("fraction of each side kept (random offset)", 0.9, 0.6, 1.0, seeded=True),
    "rotate": Bounds("largest angle in degrees (random in +-angle)", 5, 0, 20, seeded=True),
    "brightness": Bounds("largest brightness change (factor in 1 +- it)", 0.2, 0, 0.5, True),
    "noise": Bounds("Gaussian noise sigma as a fraction of 255", 0.03, 0, 0.2, seeded=True),
    "hflip": Bounds("a mirror image (no amount)", 0, 0, 0, seeded=False),
}
"""Image perturbation kinds by name."""


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from text parts through SHA-256: equal in every process and platform."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class ImagePerturbation:
    """One perturbation: its kind, amount (see ``KINDS``) and the seed of its random draws."""

    kind: str
    amount: float
    seed: int = 0

    def canonical(self) -> str:
        """``jpeg:30`` or ``noise:0.03@SEED``: what keys and messages name; unseeded kinds
        leave the seed out, so one JPEG of an image is shared by every example using it."""
        text = f"{self.kind}:{self.amount:g}"
        return f"{text}@{self.seed}" if KINDS[self.kind].seeded else text

    def apply(self, image: Image) -> Image:
        """The perturbed RGB image (``image`` is left unchanged)."""
        from PIL import Image as PILImage
        from PIL import ImageEnhance

        rng = random.Random(self.seed)
        w, h = image.size
        if self.kind == "jpeg":
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=int(self.amount))
            buffer.seek(0)
            with PILImage.open(buffer) as decoded:
                rgb: Image = decoded.convert("RGB")  # typed: a local PIL import reads as Any
                return rgb
        if self.kind == "resize":
            size = (max(1, round(w * self.amount)), max(1, round(h * self.amount)))
            return image.resize(size, PILImage.Resampling.BILINEAR)
        if self.kind == "crop":
            cw, ch = max(1, round(w * self.amount)), max(1, round(h * self.amount))
            left, top = rng.randint(0, w - cw), rng.randint(0, h - ch)
            return image.crop((left, top, left + cw, top + ch))
        if self.kind == "rotate":
            angle = rng.uniform(-self.amount, self.amount)
            corner = image.getpixel((0, 0))
            return image.rotate(angle, PILImage.Resampling.BILINEAR, fillcolor=corner)
        if self.kind == "brightness":
            return ImageEnhance.Brightness(image).enhance(1 + rng.uniform(-1, 1) * self.amount)
        if self.kind == "noise":
            return _noisy(image, self.amount, self.seed)
        return image.transpose(PILImage.Transpose.FLIP_LEFT_RIGHT)


def _noisy(image: Image, sigma: float, seed: int) -> Image:
    """Gaussian noise from numpy's PCG64 (same stream on every platform), clipped to 0-255."""
    import numpy as np
    from PIL import Image as PILImage

    pixels = np.asarray(image, dtype=np.float32)
    noise = np.random.Generator(np.random.PCG64(seed)).normal(0.0, sigma * 255, pixels.shape)
    noisy = np.clip(np.rint(pixels + noise.astype(np.float32)), 0, 255).astype(np.uint8)
    return PILImage.fromarray(noisy)


def make_perturbation(kind: str, amount: float | None, seed: int) -> ImagePerturbation:
    """A validated perturbation; ValueError says what is wrong and what is expected."""
    if kind not in KINDS:
        raise ValueError(f"unknown image perturbation '{kind}'; expected one of {', '.join(KINDS)}")
    bounds = KINDS[kind]
    if kind == "hflip":
        if amount not in (None, True):
            raise ValueError(f"'hflip' takes no amount (write 'hflip: true'), got {amount!r}")
        return ImagePerturbation(kind, 0.0)
    value = bounds.default if amount is None else amount
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"'{kind}' needs a number ({bounds.meaning}), got {value!r}")
    if not bounds.low <= value <= bounds.high or (bounds.whole and value != int(value)):
        whole = "a whole number " if bounds.whole else "a number "
        raise ValueError(
            f"'{kind}' is {value!r}; expected {whole}from {bounds.low:g} to {bounds.high:g} "
            f"({bounds.meaning})"
        )
    return ImagePerturbation(kind, float(value), seed if bounds.seeded else 0)
