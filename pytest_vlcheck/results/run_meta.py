"""What ``matrix.json`` says about the run beside its results: each model (``ModelMeta``) and
the ``run`` block (``RunBlock``: how the run measured, and its shard plan), typed from the run
that writes them to the report and the commands that read them back.

A key a newer writer adds is kept (a model's in ``extra``, the run block's among its
``conditions``), so a file read and written again keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_vlcheck.results.json_checks import JsonChecker

_MODEL_KEYS = ("name", "spec", "fingerprint", "group", "step")
_SHARD_NUMBERS = ("index", "count", "filled")


@dataclass(frozen=True)
class ModelMeta:
    """One entry of ``matrix.json``'s ``models``: the name results carry, the spec as given,
    the weights' fingerprint (``""`` when no result recorded one; None in an older file) and,
    for a checkpoint glob's members, the glob's ``group`` and the checkpoint's ``step``."""

    name: str
    spec: str | None = ""
    fingerprint: str | None = None
    group: str | None = None
    step: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        model: dict[str, Any] = {
            "name": self.name,
            "spec": self.spec,
            "fingerprint": self.fingerprint,
        }
        if self.group is not None:
            model |= {"group": self.group, "step": self.step}
        return model | dict(self.extra)

    @classmethod
    def from_json(cls, checker: JsonChecker, raw: Any, where: str) -> ModelMeta:
        """Checked: a string name, a string or null spec and fingerprint, a string group with
        an integer or null step."""
        m = checker.mapping(raw, where)
        name = checker.text(m, "name", where)
        spec, fingerprint = m.get("spec", ""), m.get("fingerprint")
        for key, value in (("spec", spec), ("fingerprint", fingerprint)):
            if value is not None and not isinstance(value, str):
                raise checker.fail(f"{where}.{key}", f"expected a string or null, got {value!r}")
        group = m.get("group")
        if group is not None and not isinstance(group, str):
            raise checker.fail(f"{where}.group", f"expected a string or null, got {group!r}")
        step = m.get("step")
        if step is not None:
            step = checker.integer(step, f"{where}.step")
        extra = {k: v for k, v in m.items() if k not in _MODEL_KEYS}
        return cls(name, spec, fingerprint, group, step, extra)


@dataclass(frozen=True)
class ShardPlan:
    """Which job of which split a run was, recorded in ``matrix.json`` so ``vlcheck merge``
    can tell shards of one split from shards of two: ``selection`` digests the groups and
    weights every job of the split saw, and ``filled`` is how many jobs received work."""

    index: int
    count: int
    selection: str
    filled: int

    def to_json(self) -> dict[str, int | str]:
        return {
            "index": self.index,
            "count": self.count,
            "selection": self.selection,
            "filled": self.filled,
        }

    @property
    def name(self) -> str:
        """``K/N``, as ``--vl-shard`` spells it."""
        return f"{self.index}/{self.count}"

    @classmethod
    def from_json(cls, checker: JsonChecker, raw: Any, where: str) -> ShardPlan:
        shard = checker.mapping(raw, where)
        numbers = {k: checker.integer(shard.get(k), f"{where}.{k}") for k in _SHARD_NUMBERS}
        if not 1 <= numbers["index"] <= numbers["count"]:
            raise checker.fail(where, f"expected 1 <= index <= count, got {numbers}")
        selection = checker.text(shard, "selection", where)
        return cls(numbers["index"], numbers["count"], selection, numbers["filled"])


@dataclass(frozen=True)
class RunBlock:
    """``matrix.json``'s ``run``: how the run measured (``conditions``: the tool's version,
    precision, device, batch size, library versions, ...; what ``vlcheck merge`` requires
    its inputs to agree on), which shard it was (None for a whole run) and how each
    generative model it loaded scores a pair's answer (``vqa_answers``: model name -> text;
    a shard records only the models it loaded)."""

    conditions: Mapping[str, Any]
    shard: ShardPlan | None = None
    vqa_answers: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        shard = None if self.shard is None else self.shard.to_json()
        answers = {"vqa_answers": dict(self.vqa_answers)} if self.vqa_answers else {}
        return {**self.conditions, **answers, "shard": shard}

    @classmethod
    def from_json(cls, checker: JsonChecker, raw: Any) -> RunBlock:
        """Free-form conditions (a newer writer may add some), a typed shard and the
        models' answers as text."""
        run = checker.mapping(raw, "run")
        shard = run.get("shard")
        conditions = {k: v for k, v in run.items() if k not in ("shard", "vqa_answers")}
        answers: dict[str, str] = {}
        if run.get("vqa_answers") is not None:
            given = checker.mapping(run["vqa_answers"], "run.vqa_answers")
            answers = {k: checker.text(given, k, "run.vqa_answers") for k in given}
        return cls(
            conditions,
            None if shard is None else ShardPlan.from_json(checker, shard, "run.shard"),
            answers,
        )
