"""Checklist generators: a few lines of ``generate:`` YAML expand into hundreds of examples.

A generator samples *assignments* (which shapes, colours, textures, states, sizes, which
relation or count), renders each as a synthetic scene plus a caption from a template, and
derives hard negatives by perturbing the assignment (replace an attribute, swap attributes
between two objects, replace the relation, swap subject and object) or the caption's words
(the four ARO word-order shuffles)::

    generate:
      n: 240                      # number of examples
      seed: 7                     # default 0; same seed, same examples on every machine
      caption: "a {a.color} {a.shape} {relation} a {b.color} {b.shape}"
      lexicon: {relation: [left, right, above, below, inside]}
      negatives: [replace relation, swap objects]
      pick: 1                     # use one of the listed negatives per example

Keys (only ``n``, ``caption`` (or ``question``) and ``negatives`` are required):

- ``n``: examples to produce; ``seed``: integer, default 0.
- ``caption``: a template, or a list of templates (one is drawn per candidate set).
  Variables: ``{a.shape}``, ``{a.color}``, ``{a.texture}``, ``{a.state}`` (hollow|filled),
  ``{a.size}`` (small|big, two-object scenes), ``{a.shapes}`` (the shape agreeing with
  ``{count}``), slots ``a``-``f``; ``{relation}`` (a is the subject, b the object);
  ``{count}`` (copies of object a, as a word; ``{number}`` in digits); ``{color}``,
  ``{shape}``, ... are short for ``{a.color}``, ``{a.shape}``, .... ``a``/``an`` are fixed
  after filling.
- ``prompts``: image tests only; a list of templates whose fills form the text's prompts.
- ``lexicon``: values to draw from, per variable (shape, color, texture, state, size,
  relation, count, background); defaults in ``DEFAULT_LEXICON``, order as written.
- ``negatives``: perturbations, each ``replace SLOT.ATTR`` / ``replace relation`` /
  ``replace count``, ``swap ATTR`` (between a and b) / ``swap objects`` (subject and
  object), ``shuffle KIND`` (an ARO shuffle, caption tests only); or a mapping
  ``{replace: a.color, k: 3, name: color}`` (``k`` negatives, ``name`` = neg tag/neg_type).
- ``pick``: how many of the listed perturbations each candidate set uses (default all).
- ``mirror``: default true (see below).
- ``objects``: number of described objects (default: the highest slot used).
- ``extras``: int or [min, max] undescribed objects of other shapes (clutter).
- ``stratify``: ``{location: [center, mid, margin], size: [small, medium, large]}`` places
  object a so that its box falls in VL-CheckList's bins, cycling through the combinations.
- ``object_size``: [min, max] side of objects without a size word (fraction of width).
- ``canvas``: square canvas side in pixels (default 224); ``tags``: constant tags.
- ``perturb``: invariance and directional tests only; adds changes to every example (then
  ``negatives`` may be left out). Invariance: the example's ``perturbations`` items
  (``jpeg``, ``{resize: 0.5}``, ``{typos: 1}``, ``{paraphrase: TEMPLATE}``: the template is
  filled for every candidate caption). Directional: ``{text: TEMPLATE, expect: lower}`` (the
  changed text) or ``{occlude: a, expect: lower}`` (the scene with object a left out); one
  example per item.
- ``question``: ``choice``, ``answer`` and ``match`` tests (``decide: yes_vs_no``); a
  template, or a list (one drawn per candidate set), filled from each member's own truth
  (``{a.shapes}`` always plural, ``{number}`` the count in digits). ``answer``: for choice
  one template, each member's fill one option (the truth's is right: ``'{number}'`` gives
  the counts of the set); for answer one template or a list, the truth's fills the accepted
  answers; for match ``"Yes"`` (default) or ``"No"``, the answer to the truth's own question
  (the other members' questions on its scene get the other). ``caption`` is then optional
  (match examples show it, else the question). See ``question_templates``.

Every example is tagged with object a's ``location`` and ``size`` bins (not for counting),
the in-play attributes of object a (``color``, ``texture``, ``state``, ``shape``,
``size_word``), ``relation`` / ``count``, and ``neg`` (the perturbations used).

Balance ("mirroring", on by default): the base assignment and its structural negatives form
a candidate set; every member of the set becomes the truth of one example (with its own
scene) and the others are its negatives. A scorer that cannot see the image prefers the same
caption in every rotation, so it is right exactly once per set: chance, by construction.
Word shuffles cannot be mirrored (a shuffled caption describes no scene); tests using them
are as text-biased as ARO itself, which is the point of comparing them with a blind baseline.

Determinism: every random draw comes from ``random.Random`` seeded with a string derived
from ``seed`` and the example's index (string seeds are hashed with SHA-512, not ``hash()``),
lexicons are iterated in the order written, and floats in scene specs are rounded to 4
decimals, so the expansion is identical across processes and platforms.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from pytest_vlcheck.checklist import perturbations as pert
from pytest_vlcheck.checklist.generate_spec import (
    ADJECTIVES,
    ATTEMPTS,
    NOUNS,
    SLOT_NAMES,
    Assignment,
    Perturbation,
    Plan,
    Retry,
    fail,
    fill_template,
    parse_generate,
)
from pytest_vlcheck.checklist.question_templates import ask_members, check_questions
from pytest_vlcheck.checklist.scene_layout import contrasting, scene_for
from pytest_vlcheck.images.scenes import SHAPES, location_bin, object_box, size_bin
from pytest_vlcheck.tasks import CandidateSet, get_task

# --------------------------------------------------------------------------- assignments


def _sample_base(plan: Plan, rng: random.Random) -> Assignment:
    lex = plan.lexicon
    shapes = rng.sample(lex["shape"], plan.slots)  # described objects never share a shape
    slots = [
        dict(s, shape=shape) for s, shape in zip(_distinct_draws(plan, rng), shapes, strict=True)
    ]
    relation = rng.choice(lex["relation"]) if plan.uses_relation else None
    count = rng.choice(lex["count"]) if plan.uses_count else None
    return Assignment(tuple(slots), relation, count)


def _distinct_draws(plan: Plan, rng: random.Random) -> list[dict[str, Any]]:
    """Attribute values per slot; attributes in play differ between slots when they can."""
    out: list[dict[str, Any]] = [{} for _ in range(plan.slots)]
    for attr in ("color", "texture", "state", "size"):
        if attr not in plan.in_play:
            default = {"texture": "solid", "state": "filled", "size": None}.get(attr)
            for s in out:
                s[attr] = rng.choice(plan.lexicon["color"]) if attr == "color" else default
            continue
        values = plan.lexicon[attr]
        picks = (
            rng.sample(values, plan.slots)
            if len(values) >= plan.slots
            else [rng.choice(values) for _ in out]
        )
        for s, v in zip(out, picks, strict=True):
            s[attr] = v
    return out


def _replace(
    plan: Plan, base: Assignment, p: Perturbation, taken: list[Assignment], rng: random.Random
) -> Assignment:
    """A new assignment from ``base`` with ``p`` applied; never equal to one in ``taken``."""
    if p.op == "swap":
        return _swapped(base, p)
    if p.target == "relation":
        used = {t.relation for t in taken}
        options = [r for r in plan.lexicon["relation"] if r not in used]
        if not options:
            raise Retry
        return replace(base, relation=rng.choice(options), name=p.name)
    if p.target == "count":
        counts = {t.count for t in taken}
        options = [c for c in plan.lexicon["count"] if c not in counts]
        if not options:
            raise Retry
        return replace(base, count=rng.choice(options), name=p.name)
    slot, _, attr = p.target.partition(".")
    i = SLOT_NAMES.index(slot)
    used = {t.slots[i][attr] for t in taken}
    if attr == "shape":  # an absent object: no slot of any member may have this shape
        used |= {s["shape"] for t in taken for s in t.slots}
    options = [v for v in plan.lexicon[attr] if v not in used]
    if not options:
        raise Retry
    slots = [dict(s) for s in base.slots]
    slots[i][attr] = rng.choice(options)
    return replace(base, slots=tuple(slots), name=p.name)


def _swapped(base: Assignment, p: Perturbation) -> Assignment:
    """``swap objects`` / ``swap ATTR``: objects a and b (or their ATTR) trade places; any
    further described object (c, d, ...) stays as it is, so three-object captions work too."""
    a, b, *rest = (dict(s) for s in base.slots)
    if p.target == "objects":
        return replace(base, slots=(b, a, *rest), name=p.name)
    if a[p.target] == b[p.target]:
        raise Retry
    a[p.target], b[p.target] = b[p.target], a[p.target]
    return replace(base, slots=(a, b, *rest), name=p.name)


# --------------------------------------------------------------------------- examples


@dataclass
class _Member:
    asg: Assignment
    caption: str
    texts: list[str]
    scene: dict[str, Any]
    target: dict[str, Any] | None
    tags: dict[str, str] = field(default_factory=dict)
    question: str = ""
    answers: tuple[str, ...] = ()


def _candidate_set(
    plan: Plan, index: int, sub_seed: str
) -> tuple[list[_Member], list[Perturbation]]:
    rng = random.Random(sub_seed)
    base = _sample_base(plan, rng)
    chosen = list(plan.negatives)
    if plan.pick is not None:
        keep = sorted(rng.sample(range(len(chosen)), plan.pick))
        chosen = [chosen[i] for i in keep]
    members = [base]
    for p in (p for p in chosen if p.structural):
        for _ in range(p.k):
            members.append(_replace(plan, base, p, members, rng))
    if any(m.relation == "inside" and not contrasting(m.slots) for m in members):
        raise Retry
    template = rng.choice(plan.captions) if plan.captions else None
    captions = [fill_template(template, m) if template else "" for m in members]
    if template and len(set(captions)) != len(captions):
        raise Retry
    questions, answers = ask_members(plan, members, rng)
    mentioned = {s["shape"] for m in members for s in m.slots}
    extra_shapes = [s for s in plan.lexicon["shape"] if s not in mentioned] or [
        s for s in SHAPES if s not in mentioned
    ]
    n_extras = rng.randint(*plan.extras)
    if n_extras and not extra_shapes:
        raise Retry
    extras = [
        {"shape": rng.choice(extra_shapes), "color": rng.choice(plan.lexicon["color"])}
        for _ in range(n_extras)
    ]
    colors = {s["color"] for m in members for s in m.slots} | {e["color"] for e in extras}
    backgrounds = [b for b in plan.lexicon["background"] if b not in colors]
    if not backgrounds:
        raise Retry
    background = rng.choice(backgrounds)
    targets = dict(plan.stratify[index % len(plan.stratify)])
    geometry = f"{sub_seed}:geometry"
    out = []
    for i, (m, caption) in enumerate(zip(members, captions, strict=True)):
        scene, target = scene_for(plan, m, extras, background, targets, geometry)
        texts = [fill_template(t, m) for t in plan.prompts]
        tags = _tags(plan, m, scene, target)
        asked = (questions[i], answers[i]) if questions else ("", ())
        out.append(_Member(m, caption, texts, scene, target, tags, *asked))
    return out, [p for p in chosen if not p.structural]


def _tags(
    plan: Plan, asg: Assignment, scene: Mapping[str, Any], target: Mapping[str, Any] | None
) -> dict[str, str]:
    tags = dict(plan.tags)
    if target is not None:
        canvas = (plan.canvas, plan.canvas)
        box = object_box(target, canvas)
        tags["location"] = location_bin(box, canvas)
        tags["size"] = size_bin(box, canvas)
    for attr in ("color", "texture", "state"):
        if attr in plan.in_play:
            tags[attr] = str(asg.slots[0][attr])
    if "size" in plan.in_play:
        tags["size_word"] = str(asg.slots[0]["size"])
    if "shape" in plan.in_play:
        tags["shape"] = str(asg.slots[0]["shape"])
    if asg.relation is not None:
        tags["relation"] = asg.relation
    if asg.count is not None:
        tags["count"] = str(asg.count)
    return tags


def _shuffled(
    caption: str, shuffles: Sequence[Perturbation], taken: list[str], rng: random.Random
) -> list[str]:
    out = []
    for p in shuffles:
        fn = pert.SHUFFLES[p.target]
        for _ in range(p.k):
            for _ in range(20):
                if p.target in ("nouns_adjectives", "all_but_nouns_adjectives"):
                    neg = fn(caption, rng, nouns=NOUNS, adjectives=ADJECTIVES)
                else:
                    neg = fn(caption, rng)
                if neg is None:
                    raise Retry
                if neg not in taken and neg not in out:
                    out.append(neg)
                    break
            else:
                raise Retry
    return out


def _examples(plan: Plan, index: int, sub_seed: str) -> list[dict[str, Any]]:
    members, shuffles = _candidate_set(plan, index, sub_seed)
    rng = random.Random(f"{sub_seed}:text")
    names = sorted({m.asg.name for m in members[1:]} | {p.name for p in shuffles})
    task = get_task(plan.task)
    truths = range(len(members)) if plan.mirror and task.generation.mirrors else range(1)
    out: list[dict[str, Any]] = []
    for t in truths:
        truth = members[t]
        candidates = CandidateSet(
            example_id=f"{index:04d}.{t}",
            truth=t,
            captions=[m.caption for m in members],
            scenes=[m.scene for m in members],
            texts=[m.texts for m in members],
            neg_names=[m.asg.name for m in members],
            tags=dict(truth.tags, neg="+".join(names)) if names else dict(truth.tags),
            text_negatives=partial(_shuffled, truth.caption, shuffles, rng=rng),
            changes=[_filled(change, members) for change in plan.perturb],
            questions=[m.question for m in members] if plan.questions else [],
            answers=[m.answers for m in members] if plan.questions else [],
        )
        out.extend(task.generate(candidates))
    return out


def _filled(change: Mapping[str, Any], members: Sequence[_Member]) -> dict[str, Any]:
    """A ``perturb:`` item for one candidate set: templates filled and object a located in
    every member's scene, in member order."""
    out = dict(change)
    for key in ("paraphrase", "text"):
        if key in out:
            out[key] = [fill_template(out[key], m.asg) for m in members]
    if "occlude" in out:
        if any(m.target is None for m in members):
            fail("perturb", "occlude needs object a in the scene (not a counting layout)")
        out["occlude"] = [
            next(i for i, o in enumerate(m.scene["objects"]) if o is m.target) for m in members
        ]
    return out


def expand(spec: Mapping[str, Any], task: str) -> list[dict[str, Any]]:
    """Expand a test's ``generate:`` mapping into raw example mappings (YAML example shape).

    Raises ValueError("KEY: ...") for a bad key or when the constraints cannot be
    met. Examples come in candidate sets (see the module docstring); set ``n`` to a multiple
    of the set's example count for exact balance.
    """
    plan = parse_generate(spec, task)
    check_questions(plan)
    out: list[dict[str, Any]] = []
    index = 0
    while len(out) < plan.n:
        for attempt in range(ATTEMPTS):
            try:
                out.extend(_examples(plan, index, f"{plan.seed}:{index}:{attempt}"))
                break
            except Retry:
                continue
        else:
            fail(
                "negatives",
                f"could not build candidate set {index} in {ATTEMPTS} draws; "
                "the lexicon is too small for these constraints",
            )
        index += 1
    return out[: plan.n]
