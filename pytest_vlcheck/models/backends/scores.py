"""``scores:FILE``: precomputed scores in JSON lines; needs no pixels and no model.

Each line is ``{"image": REF, "text": TEXT, "score": NUMBER}`` with REF the image exactly as
the checklist writes it, optionally ``"crop": [x, y, w, h]`` (or ``"crop_relative"``) and
``"example": ID``. A line with an example id applies inside that example only and wins over
a line without one (for scores that depend on the candidate set). A perturbed image
(invariance and directional tests) is its own image: its lines carry ``"perturb"`` as the
report writes it (``"jpeg:30"``, ``"noise:0.03@SEED"``), and without such a line its score
is missing, never the original image's. A pair may repeat with the
same score (one line per row of a benchmark whose rows repeat pairs, as SVO-Probes' do); a
different score for the same pair is an error naming both lines.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from pytest_vlcheck.errors import ModelFileNotFoundError, ModelLoadError
from pytest_vlcheck.models.protocol import MissingScore, ModelOptions, RefPair
from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep

if TYPE_CHECKING:  # its file is checked when the spec is parsed: numpy only when scoring
    import numpy as np

_KEYS = {"image", "text", "score", "crop", "crop_relative", "example", "perturb"}
PairKey = tuple[str, str, tuple[float, ...] | None, bool, str | None]


class ScoresFileError(ModelLoadError):
    """A malformed line of a scores file (``FILE:LINE: message``): a user error, no traceback."""


class PrecomputedScores:
    """Scores looked up by (example, image as written, crop, perturbation, text)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem
        self._scores: dict[tuple[str | None, PairKey], float] = {}
        self._lines: dict[tuple[str | None, PairKey], int] = {}
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                digest.update(raw)
                if raw.strip():
                    self._add_line(number, raw)
        self.fingerprint = "sha256:" + digest.hexdigest()

    def _add_line(self, number: int, raw: bytes) -> None:
        where = f"{self.path}:{number}"
        if json_too_deep(raw) is not None:
            raise ScoresFileError(f"{where}: {TOO_DEEP}")
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ScoresFileError(f"{where}: not a JSON object: {exc}") from None
        if not isinstance(record, dict):
            raise ScoresFileError(f"{where}: expected a JSON object per line")
        unknown = set(record) - _KEYS
        if unknown:
            raise ScoresFileError(
                f"{where}: unknown keys {sorted(unknown)}; expected {sorted(_KEYS)}"
            )
        for name in ("image", "text"):
            if not isinstance(record.get(name), str):
                raise ScoresFileError(f"{where}: '{name}' must be a string")
        perturb = record.get("perturb")
        if perturb is not None and not isinstance(perturb, str):
            raise ScoresFileError(f"{where}: 'perturb' must be a string such as \"jpeg:30\"")
        score = record.get("score")
        if not _is_finite_number(score):
            raise ScoresFileError(f"{where}: 'score' must be a finite number, got {score!r}")
        example = record.get("example")
        if example is not None and not isinstance(example, (str, int)):
            raise ScoresFileError(f"{where}: 'example' must be a string or an integer")
        relative = "crop_relative" in record
        crop = record.get("crop_relative" if relative else "crop")
        if crop is not None and not (
            isinstance(crop, list) and len(crop) == 4 and all(map(_is_finite_number, crop))
        ):
            raise ScoresFileError(f"{where}: a crop must be four numbers [x, y, w, h], got {crop}")
        key = _pair_key(
            record["image"],
            tuple(float(v) for v in crop) if crop else None,
            relative,
            record["text"],
            perturb,
        )
        scope = None if example is None else str(example)
        known = self._lines.get((scope, key))
        if known is not None:
            if self._scores[(scope, key)] == float(score):
                return
            raise ScoresFileError(
                f"{where}: score {score} for {_describe(key)}, which line {known} scores "
                f"{self._scores[(scope, key)]}; a pair has one score"
            )
        self._scores[(scope, key)] = float(score)
        self._lines[(scope, key)] = number

    def score_refs(self, pairs: Sequence[RefPair]) -> np.ndarray:
        """The score of each pair; an example's own line wins over a general one."""
        import numpy as np

        out = np.empty(len(pairs), dtype=np.float32)
        for index, pair in enumerate(pairs):
            image = pair.image
            perturb = None if image.perturb is None else image.perturb.canonical()
            key = _pair_key(image.written, image.crop, image.crop_relative, pair.text, perturb)
            score = self._scores.get((pair.example_id, key))
            if score is None:
                score = self._scores.get((None, key))
            if score is None:
                raise MissingScore(
                    f"{self.path} has no score for {_describe(key)} (example '{pair.example_id}')"
                )
            out[index] = score
        return out


def _is_finite_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _pair_key(
    image: str, crop: tuple[float, ...] | None, relative: bool, text: str, perturb: str | None
) -> PairKey:
    return (image, text, crop, relative and crop is not None, perturb)


def _describe(key: PairKey) -> str:
    image, text, crop, relative, perturb = key
    where = f" {'crop_relative' if relative else 'crop'} {list(crop)}" if crop else ""
    where += f" perturb={perturb}" if perturb else ""
    return f"image '{image}'{where} with text {text!r}"


def check_files(body: str) -> str | None:
    """The scores file (``spec_files``)."""
    path = Path(body).expanduser()
    if path.is_file():
        return None
    found = "is a directory" if path.is_dir() else "not found"
    return (
        f"scores file {found} (looked for {path.absolute()}); expected a JSON Lines file of "
        "{image, text, score} lines"
    )


def load(body: str, options: ModelOptions) -> Any:
    """Read the scores file named by the spec."""
    path = Path(body)
    expected = "expected a JSON Lines file of {image, text, score} lines"
    if not path.is_file():
        found = "is a directory" if path.is_dir() else "not found"
        raise ModelFileNotFoundError(
            f"scores:{body}: scores file {found} (looked for {path.absolute()}); {expected}"
        )
    try:
        return PrecomputedScores(path)
    except OSError as exc:
        reason = exc.strerror or exc
        raise ModelLoadError(f"scores:{body}: cannot read the scores file: {reason}") from None
