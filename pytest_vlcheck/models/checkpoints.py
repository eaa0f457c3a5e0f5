"""Checkpoints as training writes them: a glob in a spec's weights part is one model per file.

``run=open_clip:cfg.json@ckpts/epoch_*.safetensors`` and ``hf:out/checkpoint-*`` become one
spec per match, in natural order (``epoch_2`` before ``epoch_10``), named ``GROUP@STEM``
(``run@epoch_2``), where GROUP is the spec's name, shared by the checkpoints as their scalar
prefix (one curve per scalar), and with the training step read from the file name: the last
number in it (``epoch_12`` -> 12, ``checkpoint-500`` -> 500; none -> None).
"""

from __future__ import annotations

import glob
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vlcheck.errors import ModelSpecError

if TYPE_CHECKING:
    from pytest_vlcheck.models.protocol import ModelSpec

GLOB_CHARACTERS = frozenset("*?[")
_NUMBER = re.compile(r"\d+")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.+-]")


def is_glob(text: str) -> bool:
    return any(c in GLOB_CHARACTERS for c in text)


def weights_part(scheme: str, body: str) -> tuple[str, str, str]:
    """(what comes before, the weights path, what comes after) of a spec body: open_clip's
    weights follow ``@``; hf's are the body up to a ``#BASE`` naming its processor."""
    if scheme == "open_clip" and "@" in body:
        arch, _, weights = body.partition("@")
        return f"{arch}@", weights, ""
    if scheme == "hf":
        weights, sep, base = body.partition("#")
        return "", weights, sep + base
    return body, "", ""


def natural_key(text: str) -> list[int | str]:
    """Digits compared as numbers: ``epoch_2`` < ``epoch_10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def step_of(path: str) -> int | None:
    """The last number in the file or folder name, or None."""
    numbers = _NUMBER.findall(Path(path.rstrip("/")).name)
    return int(numbers[-1]) if numbers else None


def expand_checkpoints(spec: ModelSpec) -> list[ModelSpec]:
    """The spec itself, or one spec per checkpoint its glob matches."""
    kept, weights, after = weights_part(spec.scheme, spec.body)
    if not weights or not is_glob(weights):
        return [spec]
    matches = sorted(glob.glob(weights), key=natural_key)
    if not matches:
        raise ModelSpecError(
            f"{spec.text!r}: the checkpoint glob {weights!r} matches nothing; "
            "expected weights files (or hf checkpoint folders) that exist"
        )
    members = []
    for match in matches:
        stem = Path(match.rstrip("/")).name.removesuffix(".safetensors")
        name = f"{spec.name}@{_NOT_IN_NAME.sub('-', stem)}"
        body = f"{kept}{match}{after}"
        members.append(
            replace(
                spec,
                name=name,
                text=f"{spec.scheme}:{body}",
                body=body,
                group=spec.name,
                step=step_of(match),
            )
        )
    return members
