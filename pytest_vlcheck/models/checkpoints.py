"""Checkpoints as training writes them: a glob in a spec's weights part is one model per file.

``run=open_clip:cfg.json@ckpts/epoch_*.safetensors`` and ``hf:out/checkpoint-*`` become one
spec per match, in natural order (``epoch_2`` before ``epoch_10``), named ``GROUP@STEM``
(``run@epoch_2``), where GROUP is the spec's name, shared by the checkpoints as their scalar
prefix (one curve per scalar), and with the training step read from the file name: the last
number in it (``epoch_12`` -> 12, ``checkpoint-500`` -> 500; none -> None).

A glob whose checkpoints would share a column name (``a b`` and ``a-b``, ``runs/*/model``) or
a step (``epoch_1`` and ``run_1``) is refused naming both files: two points at one step, or
two columns under one name, would mix two checkpoints. Checkpoints without a step are
measured; ``unstepped`` names them for the warning (and a logger's refusal: a curve needs
steps).
"""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
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
    weights follow ``@``; hf's are the body up to a ``#BASE`` naming its processor, vqa's
    the whole body (a ``save_pretrained`` folder)."""
    if scheme == "open_clip" and "@" in body:
        arch, _, weights = body.partition("@")
        return f"{arch}@", weights, ""
    if scheme == "hf":
        weights, sep, base = body.partition("#")
        return "", weights, sep + base
    if scheme == "vqa" and "://" not in body:  # a model folder, not a served model's URL
        return "", body, ""
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
    weights = weights_part(spec.scheme, spec.body)[1]
    if not weights or not is_glob(weights):
        return [spec]
    members = glob_members(spec)
    if not members:
        raise ModelSpecError(
            f"{spec.text!r}: the checkpoint glob {weights!r} matches nothing; "
            "expected weights files (or hf checkpoint folders) that exist"
        )
    return members


def glob_members(spec: ModelSpec) -> list[ModelSpec]:
    """One spec per file the spec's glob matches now, in natural order (none: empty)."""
    kept, weights, after = weights_part(spec.scheme, spec.body)
    matches = sorted(glob.glob(weights), key=natural_key)
    members = []
    by_name: dict[str, str] = {}
    by_step: dict[int, str] = {}
    for match in matches:
        stem = Path(match.rstrip("/")).name.removesuffix(".safetensors")
        name = f"{spec.name}@{_NOT_IN_NAME.sub('-', stem)}"
        step = step_of(match)
        if name in by_name:
            raise ModelSpecError(
                f"{spec.text!r}: checkpoints {by_name[name]} and {match} would both be the "
                f"column {name!r}; expected file names that differ in letters, digits or "
                "'_.+-' (rename one), or a glob matching one of them"
            )
        if step is not None and step in by_step:
            raise ModelSpecError(
                f"{spec.text!r}: checkpoints {by_step[step]} and {match} both have step {step} "
                "(the last number in the name); expected one checkpoint per step (a glob "
                "matching one of them, or files renamed)"
            )
        by_name[name] = match
        if step is not None:
            by_step[step] = match
        body = f"{kept}{match}{after}"
        members.append(
            replace(
                spec,
                name=name,
                text=f"{spec.scheme}:{body}",
                body=body,
                group=spec.name,
                step=step,
            )
        )
    return members


def unstepped(specs: Sequence[ModelSpec]) -> str | None:
    """The glob checkpoints whose names hold no step, as one line, or None."""
    files = [
        weights_part(spec.scheme, spec.body)[1]
        for spec in specs
        if spec.group is not None and spec.step is None
    ]
    if not files:
        return None
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return (
        f"checkpoint glob: {shown} hold no step in their names (no number); expected names "
        "like epoch_3 or checkpoint-500 for a curve over steps"
    )
