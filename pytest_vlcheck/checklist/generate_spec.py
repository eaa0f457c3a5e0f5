"""The ``generate:`` mapping of a checklist test: its vocabulary, validation and templates.

``parse_generate`` turns the YAML mapping into a ``Plan`` (or raises ValueError naming the
bad key); ``fill_template`` writes a caption for an ``Assignment``. See ``generators`` for
what the keys mean and how a plan expands into examples.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from pytest_vlcheck.checklist import perturbations as pert
from pytest_vlcheck.images.scenes import (
    BACKGROUNDS,
    COLORS,
    DEFAULT_CANVAS,
    OBJECT_COLORS,
    SHAPE_PLURALS,
    SHAPES,
    TEXTURES,
)
from pytest_vlcheck.tasks import GenerationRules, builtin_tasks, get_task

# --------------------------------------------------------------------------- vocabulary

SLOT_NAMES = "abcdef"
ATTRIBUTES = ("shape", "color", "texture", "state", "size")
RELATION_PHRASES: dict[str, str] = {
    "left": "to the left of",
    "right": "to the right of",
    "above": "above",
    "below": "below",
    "inside": "inside",
}
COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
STATES = ("filled", "hollow")
SIZE_ATTRIBUTE_WORDS = ("small", "big")
Values = tuple[Any, ...]
"""A variable's values to draw from: words, or whole numbers for ``count`` (its name says which)."""
DEFAULT_LEXICON: dict[str, Values] = {
    "shape": SHAPES,
    "color": tuple(c for c in OBJECT_COLORS if c != "white"),  # white is also a background
    "texture": tuple(t for t in TEXTURES if t != "solid"),
    "state": STATES,
    "size": SIZE_ATTRIBUTE_WORDS,
    "relation": tuple(RELATION_PHRASES),
    "count": (1, 2, 3, 4),
    "background": BACKGROUNDS,
}
ALLOWED_VALUES: dict[str, Values] = {
    "shape": SHAPES,
    "color": tuple(COLORS),
    "texture": TEXTURES,
    "state": STATES,
    "size": SIZE_ATTRIBUTE_WORDS,
    "relation": tuple(RELATION_PHRASES),
    "count": tuple(COUNT_WORDS),
    "background": tuple(COLORS),
}
DEFAULT_SIDE = (0.16, 0.28)
ATTEMPTS = 60  # re-draws of one candidate set before giving up

NOUNS = frozenset(SHAPES) | frozenset(SHAPE_PLURALS.values())
ADJECTIVES = frozenset(COLORS) | frozenset(TEXTURES) | frozenset(STATES) | {"small", "big"}

_KEYS = (
    "n",
    "seed",
    "caption",
    "prompts",
    "lexicon",
    "negatives",
    "pick",
    "mirror",
    "objects",
    "extras",
    "stratify",
    "canvas",
    "tags",
    "object_size",
    "perturb",
    "question",
    "answer",
)
SCENE_VARIABLES = ("relation", "count", "number")
"""Variables of the scene as a whole: the relation phrase, the count as a word and in digits."""
_VAR = re.compile(r"\{([a-z]+)(?:\.([a-z]+))?\}")


class Retry(Exception):
    """This draw cannot satisfy the constraints; draw again with the next sub-seed."""


def fail(key: str, message: str) -> NoReturn:
    """Messages start with the generate key; the loader prefixes ``FILE:LINE: generate:``."""
    raise ValueError(f"{key}: {message}")


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class Perturbation:
    op: str  # replace | swap | shuffle
    target: str  # "a.color", "relation", "count", "color", "objects", "trigrams", ...
    k: int
    name: str

    @property
    def structural(self) -> bool:
        return self.op != "shuffle"


Targets = tuple[tuple[str, str], ...]
"""Object a's VL-CheckList bins for one candidate set: ``(("location", "mid"), ...)``."""


@dataclass(frozen=True)
class Plan:
    task: str
    n: int
    seed: int
    captions: tuple[str, ...]
    prompts: tuple[str, ...]
    lexicon: Mapping[str, Values]
    in_play: frozenset[str]
    slots: int
    negatives: tuple[Perturbation, ...]
    pick: int | None
    mirror: bool
    extras: tuple[int, int]
    stratify: tuple[Targets, ...]  # per-base targets cycle through these combos
    canvas: int
    tags: Mapping[str, str]
    object_size: tuple[float, float]
    uses_relation: bool
    uses_count: bool
    perturb: tuple[Mapping[str, Any], ...] = ()
    questions: tuple[str, ...] = ()  # ``question:`` templates (``question_templates``)
    answers: tuple[str, ...] = ()  # ``answer:`` templates, or Yes / No for match


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)


def _parse_perturbation(i: int, raw: Any) -> Perturbation:
    key = f"negatives[{i}]"
    k, name = 1, None
    if isinstance(raw, str):
        parts = raw.split()
        if len(parts) != 2:
            fail(
                key,
                f"expected 'replace VAR', 'swap ATTR', 'swap objects' or "
                f"'shuffle KIND', got {raw!r}",
            )
        op, target = parts
    elif isinstance(raw, Mapping):
        ops = [o for o in ("replace", "swap", "shuffle") if o in raw]
        unknown = sorted(set(raw) - {"replace", "swap", "shuffle", "k", "name"})
        if unknown:
            fail(f"{key}.{unknown[0]}", "unknown key; expected replace|swap|shuffle, k, name")
        if len(ops) != 1:
            fail(key, "expected exactly one of replace, swap, shuffle")
        op, target = ops[0], raw[ops[0]]
        k = raw.get("k", 1)
        name = raw.get("name")
        if not (isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 8):
            fail(f"{key}.k", f"expected an integer 1-8 (negatives to make), got {k!r}")
        if name is not None and not isinstance(name, str):
            fail(f"{key}.name", f"expected a string, got {name!r}")
    else:
        fail(key, f"expected a string like 'replace a.color' or a mapping, got {raw!r}")
    if not isinstance(target, str):
        fail(key, f"expected a string target, got {target!r}")
    if op == "replace":
        slot, _, attr = target.partition(".")
        ok = target in ("relation", "count") or (
            len(slot) == 1 and slot in SLOT_NAMES and attr in ATTRIBUTES
        )
        if not ok:
            fail(
                key,
                f"cannot replace {target!r}; expected SLOT.ATTR (slot a-f, attr one of "
                f"{', '.join(ATTRIBUTES)}), relation or count",
            )
        default = "object" if attr == "shape" else (attr or target)
    elif op == "swap":
        if target not in (*ATTRIBUTES, "objects"):
            fail(key, f"cannot swap {target!r}; expected one of {', '.join(ATTRIBUTES)} or objects")
        default = f"swap_{target}"
    elif op == "shuffle":
        if target not in pert.SHUFFLES:
            fail(key, f"unknown shuffle {target!r}; expected one of {', '.join(pert.SHUFFLES)}")
        default = f"shuffle_{target}"
    else:
        fail(key, f"unknown operation {op!r}; expected replace, swap or shuffle")
    return Perturbation(op, target, k, name or default)


def _parse_lexicon(raw: Any) -> dict[str, Values]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        fail("lexicon", f"expected a mapping of variable -> list of values, got {raw!r}")
    out: dict[str, Values] = {}
    for name, values in raw.items():
        if name not in ALLOWED_VALUES:
            fail(
                f"lexicon.{name}", f"unknown variable; expected one of {', '.join(ALLOWED_VALUES)}"
            )
        vals = [] if values is None else _as_list(values)
        allowed = ", ".join(map(str, ALLOWED_VALUES[name]))
        if not vals:
            fail(
                f"lexicon.{name}",
                f"no values; expected a list of values to draw from ({allowed}), or leave "
                f"{name} out for the default",
            )
        bad = [v for v in vals if v not in ALLOWED_VALUES[name]]
        if bad:
            fail(f"lexicon.{name}", f"unknown value {bad[0]!r}; expected values from {allowed}")
        if len(set(vals)) != len(vals):
            fail(f"lexicon.{name}", "values repeat; list each value once")
        out[name] = tuple(vals)
    return out


def _variable(m: re.Match[str]) -> tuple[str, str | None]:
    """(slot, attribute) of a template variable; ``{color}`` is short for ``{a.color}``."""
    name, attr = m.group(1), m.group(2)
    if attr is None and name in (*ATTRIBUTES, "shapes"):
        return "a", name
    return name, attr


def template_vars(key: str, template: Any) -> set[tuple[str, str | None]]:
    if not isinstance(template, str) or not template.strip():
        fail(key, f"expected a caption template string, got {template!r}")
    found = set()
    for m in _VAR.finditer(template):
        name, attr = _variable(m)
        if attr is None:
            if name not in SCENE_VARIABLES:
                fail(
                    key,
                    f"unknown variable {{{name}}}; expected {{relation}}, {{count}}, "
                    "{number} or {SLOT.ATTR} such as {a.color}",
                )
        elif not (len(name) == 1 and name in SLOT_NAMES and attr in (*ATTRIBUTES, "shapes")):
            fail(
                key,
                f"unknown variable {{{name}.{attr}}}; slots are a-f and attributes "
                f"{', '.join(ATTRIBUTES)}, shapes",
            )
        found.add((name, attr))
    leftover = _VAR.sub("", template)
    if "{" in leftover or "}" in leftover:
        fail(key, f"malformed braces in {template!r}")
    return found


def parse_generate(spec: Mapping[str, Any], task: str) -> Plan:
    """Validate a ``generate:`` mapping for a test of kind ``task`` into a ``Plan``."""
    if not isinstance(spec, Mapping):
        raise ValueError("expected a mapping (n, seed, caption, negatives, ...)")
    for key in spec:
        if key not in _KEYS:
            fail(str(key), f"unknown key; expected one of {', '.join(_KEYS)}")
    n = spec.get("n")
    if not (isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 100_000):
        fail("n", f"expected the number of examples, an integer 1-100000, got {n!r}")
    seed = spec.get("seed", 0)
    if not (isinstance(seed, int) and not isinstance(seed, bool)):
        fail("seed", f"expected an integer, got {seed!r}")
    rules = get_task(task).generation
    if not rules.generates:
        raise ValueError(f"{task} tests cannot be generated from scenes; write their examples")
    captions, prompts, asked, used = _parse_templates(spec)
    if prompts and not rules.takes_prompts:
        kinds = " and ".join(t.name for t in builtin_tasks() if t.generation.takes_prompts)
        fail("prompts", f"only {kinds} tests take prompt lists; use caption elsewhere")
    perturb = _parse_perturb(spec.get("perturb"), used)
    if perturb and not rules.changes:
        kinds = " and ".join(t.name for t in builtin_tasks() if t.generation.changes)
        fail("perturb", f"only {kinds} tests take perturb; this test is {task}")
    lexicon = dict(DEFAULT_LEXICON)
    given = _parse_lexicon(spec.get("lexicon"))
    lexicon.update(given)
    negatives = _parse_negatives(spec.get("negatives"), optional=bool(perturb))
    slots, described = _parse_slots(spec, used, negatives)
    uses_relation = ("relation", None) in used or any(p.target == "relation" for p in negatives)
    uses_count = bool({("count", None), ("number", None)} & used) or any(
        p.target == "count" for p in negatives
    )
    _check_structure(slots, described, negatives, uses_relation, uses_count)
    in_play = _in_play(used, negatives, given)
    pick = spec.get("pick")
    if pick is not None and not (
        isinstance(pick, int) and not isinstance(pick, bool) and 1 <= pick <= len(negatives)
    ):
        fail("pick", f"expected an integer 1-{len(negatives)} (perturbations per example)")
    _check_task_rules(task, rules, negatives, pick)
    mirror = spec.get("mirror", True)
    if not isinstance(mirror, bool):
        fail("mirror", f"expected true or false, got {mirror!r}")
    layout = _parse_layout(spec, uses_relation or uses_count)
    _check_lexicon(lexicon, in_play, slots)
    return Plan(
        task=task,
        n=n,
        seed=seed,
        captions=tuple(captions),
        prompts=tuple(prompts),
        lexicon=lexicon,
        in_play=frozenset(in_play),
        slots=slots,
        negatives=negatives,
        pick=pick,
        mirror=mirror,
        uses_relation=uses_relation,
        uses_count=uses_count,
        perturb=perturb,
        questions=asked[0],
        answers=asked[1],
        **layout,
    )


def _parse_templates(
    spec: Mapping[str, Any],
) -> tuple[
    list[str], list[str], tuple[tuple[str, ...], tuple[str, ...]], set[tuple[str, str | None]]
]:
    """Caption, prompt, question and answer templates, and the variables they use (a test
    that asks a ``question`` may leave the caption out)."""
    if "caption" not in spec and "question" not in spec:
        fail("caption", "missing; give a template such as 'a {a.color} {a.shape}'")
    captions = _as_list(spec["caption"]) if "caption" in spec else []
    prompts = _as_list(spec["prompts"]) if "prompts" in spec else []
    questions = _as_list(spec["question"]) if "question" in spec else []
    answers = _as_list(spec["answer"]) if "answer" in spec else []
    used: set[tuple[str, str | None]] = set()
    for key, templates in (("caption", captions), ("question", questions), ("answer", answers)):
        for i, t in enumerate(templates):
            if key == "answer" and not isinstance(t, str):
                fail(
                    "answer",
                    f"expected a template string such as '{{a.color}}', or for match \"Yes\" "
                    f'or "No" in quotes (YAML reads a bare yes or no as true or false), '
                    f"got {t!r}",
                )
            used |= template_vars(f"{key}[{i}]" if len(templates) > 1 else key, t)
    for i, t in enumerate(prompts):
        used |= template_vars(f"prompts[{i}]", t)
    return captions, prompts, (tuple(questions), tuple(answers)), used


def _parse_negatives(raw: Any, *, optional: bool = False) -> tuple[Perturbation, ...]:
    if raw is None and optional:
        return ()
    if raw is None:
        fail("negatives", "missing; e.g. [replace a.color] or [swap color]")
    negatives = tuple(_parse_perturbation(i, r) for i, r in enumerate(_as_list(raw)))
    if not negatives:
        fail("negatives", "expected at least one perturbation")
    return negatives


def _parse_perturb(raw: Any, used: set[tuple[str, str | None]]) -> tuple[Mapping[str, Any], ...]:
    """``perturb:`` items as mappings (``jpeg`` -> ``{jpeg: null}``); ``paraphrase`` and
    ``text`` values are caption templates (their variables join ``used``), ``occlude`` names
    object ``a``, ``expect`` is lower or higher. The kind checks the rest when it parses the
    examples it wrote."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        fail("perturb", f"expected a non-empty list of perturbations, got {raw!r}")
    out = []
    for i, item in enumerate(raw):
        change = {item: None} if isinstance(item, str) else item
        if not isinstance(change, Mapping):
            fail(f"perturb[{i}]", f"expected a name or a mapping, got {item!r}")
        for key in ("paraphrase", "text"):
            if key in change:
                used |= template_vars(f"perturb[{i}].{key}", change[key])
        if "occlude" in change and change["occlude"] != "a":
            fail(
                f"perturb[{i}].occlude",
                f"expected a (object a is left out), got {change['occlude']!r}",
            )
        if change.get("expect", "lower") not in ("lower", "higher"):
            fail(f"perturb[{i}].expect", f"expected lower or higher, got {change['expect']!r}")
        out.append(dict(change))
    return tuple(out)


def _parse_slots(
    spec: Mapping[str, Any],
    used: set[tuple[str, str | None]],
    negatives: tuple[Perturbation, ...],
) -> tuple[int, set[str]]:
    """The number of described objects, and the slots the templates describe."""
    slots_used = {name for name, attr in used if attr is not None}
    described = set(slots_used)
    for p in negatives:
        if p.op == "replace" and "." in p.target:
            slots_used.add(p.target[0])
        if p.op == "swap":
            slots_used |= {"a", "b"}
    slots = spec.get("objects", max([SLOT_NAMES.index(s) + 1 for s in slots_used], default=1))
    if not (isinstance(slots, int) and not isinstance(slots, bool) and 1 <= slots <= 6):
        fail("objects", f"expected the number of described objects, 1-6, got {slots!r}")
    if any(SLOT_NAMES.index(s) >= slots for s in slots_used):
        fail(
            "objects", f"templates use slots {', '.join(sorted(slots_used))} but objects is {slots}"
        )
    return slots, described


def _check_structure(
    slots: int,
    described: set[str],
    negatives: tuple[Perturbation, ...],
    uses_relation: bool,
    uses_count: bool,
) -> None:
    """Relations need two objects, counts one; each perturbation needs what it changes."""
    if uses_relation and slots != 2:
        fail("caption", "{relation} needs exactly two objects, a (subject) and b (object)")
    if uses_count and slots != 1:
        fail("caption", "{count} needs exactly one described object, a")
    if uses_relation and uses_count:
        fail("caption", "use {relation} or {count}, not both")
    for p in negatives:
        if p.op == "swap" and not {"a", "b"} <= described:
            fail(
                "negatives",
                f"'swap {p.target}' needs a caption that describes two objects, a and b",
            )
        if p.op == "swap" and p.target == "objects" and not uses_relation:
            fail(
                "negatives",
                "'swap objects' needs {relation} in the caption (without a "
                "relation both orders describe the same scene)",
            )
        if p.target == "relation" and not uses_relation:
            fail("negatives", "'replace relation' needs {relation} in the caption")
        if p.target == "count" and not uses_count:
            fail("negatives", "'replace count' needs {count} in the caption")


def _in_play(
    used: set[tuple[str, str | None]],
    negatives: tuple[Perturbation, ...],
    given: Mapping[str, Any],
) -> set[str]:
    """The attributes the examples vary (and so tag)."""
    in_play = {attr for _, attr in used if attr in ATTRIBUTES}
    in_play |= {"shape"} if any(attr == "shapes" for _, attr in used) else set()
    in_play |= {p.target.partition(".")[2] or p.target for p in negatives if p.op == "replace"}
    in_play |= {p.target for p in negatives if p.op == "swap"}
    in_play |= {k for k in given if k in ATTRIBUTES}
    return in_play - {"relation", "count", "objects"}


def _check_task_rules(
    task: str, rules: GenerationRules, negatives: tuple[Perturbation, ...], pick: int | None
) -> None:
    """What the task kind accepts: word shuffles, and how many scene negatives."""
    structural = [p for p in negatives if p.structural]
    if not rules.text_negatives and any(not p.structural for p in negatives):
        fail(
            "negatives",
            f"{task} tests need scene negatives; word shuffles make captions "
            "that describe no image (use them in caption tests)",
        )
    if rules.scene_negatives == 1 and not (
        all(p.k == 1 for p in structural) and (len(structural) == 1 or pick == 1)
    ):
        fail(
            "negatives",
            f"{task} tests need exactly one scene negative per example "
            "(one perturbation with k: 1, or pick: 1)",
        )


def _check_lexicon(lexicon: Mapping[str, Values], in_play: set[str], slots: int) -> None:
    for attr in sorted(in_play - {"shape"}):
        if len(lexicon[attr]) < 2:
            fail(f"lexicon.{attr}", "needs at least 2 values to make a negative")
    if len(lexicon["shape"]) < slots + 1:
        fail(
            "lexicon.shape",
            f"needs at least {slots + 1} shapes (one per object plus one for a replacement)",
        )


def _parse_layout(spec: Mapping[str, Any], fixed_layout: bool) -> dict[str, Any]:
    """Extras, stratification, canvas, object size and constant tags, as Plan fields."""
    extras = spec.get("extras", 0)
    ex = [extras, extras] if isinstance(extras, int) and not isinstance(extras, bool) else extras
    if not (
        isinstance(ex, (list, tuple))
        and len(ex) == 2
        and all(isinstance(e, int) and not isinstance(e, bool) and 0 <= e <= 6 for e in ex)
        and ex[0] <= ex[1]
    ):
        fail(
            "extras",
            f"expected an integer 0-6 or [min, max] of undescribed extra objects, got {extras!r}",
        )
    stratify = _parse_stratify(spec.get("stratify"), fixed_layout)
    canvas = spec.get("canvas", DEFAULT_CANVAS)
    if not (isinstance(canvas, int) and not isinstance(canvas, bool) and 64 <= canvas <= 1024):
        fail("canvas", f"expected a square canvas side in pixels, 64-1024, got {canvas!r}")
    object_size = spec.get("object_size", list(DEFAULT_SIDE))
    if not (
        isinstance(object_size, (list, tuple))
        and len(object_size) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in object_size)
        and 0.02 <= object_size[0] <= object_size[1] <= 0.6
    ):
        fail(
            "object_size",
            f"expected [min, max] object side as fractions of the canvas "
            f"width, 0.02 <= min <= max <= 0.6, got {object_size!r}",
        )
    tags = spec.get("tags", {})
    if not isinstance(tags, Mapping) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in tags.items()
    ):
        fail("tags", f"expected a mapping of tag -> value, got {tags!r}")
    return {
        "extras": (ex[0], ex[1]),
        "stratify": stratify,
        "canvas": canvas,
        "tags": {str(k): str(v) for k, v in tags.items()},
        "object_size": (float(object_size[0]), float(object_size[1])),
    }


def _parse_stratify(raw: Any, fixed_layout: bool) -> tuple[Targets, ...]:
    """Targets for object a's VL-CheckList bins, cycled over the candidate sets."""
    if raw is None:
        return ((),)
    if not isinstance(raw, Mapping):
        fail("stratify", "expected a mapping like {location: [center, mid, margin]}")
    if fixed_layout:
        fail("stratify", "cannot stratify location/size with {relation} or {count} layouts")
    choices: list[list[tuple[str, str]]] = []
    for key, allowed in (
        ("location", ("center", "mid", "margin")),
        ("size", ("small", "medium", "large")),
    ):
        if key in raw:
            vals = _as_list(raw[key])
            if not vals or any(v not in allowed for v in vals):
                fail(f"stratify.{key}", f"expected a list from {', '.join(allowed)}")
            choices.append([(key, v) for v in vals])
    unknown = sorted(set(raw) - {"location", "size"})
    if unknown:
        fail(f"stratify.{unknown[0]}", "unknown key; expected location and/or size")
    return tuple(itertools.product(*choices))


# --------------------------------------------------------------------------- assignments


@dataclass(frozen=True)
class Assignment:
    slots: tuple[Mapping[str, Any], ...]
    relation: str | None = None
    count: int | None = None
    name: str = ""  # the perturbation that made it ("" for the base)


# --------------------------------------------------------------------------- captions


def _fix_articles(text: str) -> str:
    words = text.split()
    for i, w in enumerate(words[:-1]):
        if w.lower() in ("a", "an"):
            art = "an" if words[i + 1][:1].lower() in "aeiou" else "a"
            words[i] = art.capitalize() if w[:1].isupper() else art
    return " ".join(words)


def fill_template(template: str, asg: Assignment, *, plural: bool = False) -> str:
    """The template filled from ``asg``; ``plural``: ``{a.shapes}`` is always the plural (a
    question such as "How many {a.shapes} are there?" does not know the count)."""

    def value(m: re.Match[str]) -> str:
        name, attr = _variable(m)
        if attr is None:
            if name == "relation":
                return RELATION_PHRASES[asg.relation]  # type: ignore[index]
            if name == "number":
                return str(asg.count)
            return COUNT_WORDS[asg.count]  # type: ignore[index]
        slot = asg.slots[SLOT_NAMES.index(name)]
        if attr == "shapes":
            singular = not plural and asg.count in (None, 1)
            return slot["shape"] if singular else SHAPE_PLURALS[slot["shape"]]
        return str(slot[attr])

    return _fix_articles(_VAR.sub(value, template))
