"""``question:`` and ``answer:`` of a ``generate:`` block: questions for a generative model,
filled from each scene's truth, with exact answers (``choice``, ``answer``, ``match`` with
``decide: yes_vs_no``).

The candidate set is the one of the caption kinds (a base assignment and its scene
negatives, every member the truth of one example); each member fills the question template
(``{a.shapes}`` always plural: a question does not know the count) and the answer templates.
What tells the members apart must differ between them, or one scene would hold two right
options (choice), two sets of answers could coincide (answer), or one question would be asked
with both answers (match): the answer for choice and answer, the question for match. Every
negative must change a variable those templates name; a draw whose fills still coincide is
drawn again.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pytest_vlcheck.checklist.generate_spec import (
    ATTRIBUTES,
    Assignment,
    Perturbation,
    Plan,
    Retry,
    fail,
    fill_template,
    template_vars,
)
from pytest_vlcheck.tasks import builtin_tasks, get_task

YES_NO = ("Yes", "No")
Variable = tuple[str, str | None]


def check_questions(plan: Plan) -> None:
    """What the test's kind takes (``GenerationRules.asks``), and questions that vary."""
    form = get_task(plan.task).generation.asks
    if (plan.questions or plan.answers) and not form:
        kinds = ", ".join(t.name for t in builtin_tasks() if t.generation.asks)
        key = "question" if plan.questions else "answer"
        fail(key, f"only {kinds} tests ask questions; this test is {plan.task}")
    if plan.answers and not plan.questions:
        fail("answer", "needs a question template to answer, e.g. 'What color is the {a.shape}?'")
    if not plan.questions:
        if form == "accepted":
            fail("question", "missing; answer tests ask a question, e.g. 'How many {a.shapes}...'")
        return
    if form == "yes_no":
        if plan.answers not in ((), ("Yes",), ("No",)):
            fail(
                "answer",
                f'expected "Yes" (the default) or "No": the answer to the question filled from '
                f"the scene's own truth, got {list(plan.answers)}",
            )
        telling, key = _shared("question", plan.questions), "question"
    elif not plan.answers:
        fail("answer", "missing; e.g. '{a.color}' (the template every candidate fills)")
    elif form == "option" and len(plan.answers) != 1:
        fail("answer", "expected one template: each candidate's fill is one option")
    else:
        telling, key = set().union(*(template_vars("answer", a) for a in plan.answers)), "answer"
    for p in plan.negatives:
        if not telling & _changed(p):
            fail(
                key,
                f"'{p.op} {p.target}' changes nothing the {key} names, so two candidates "
                f"would share it; expected a {key} that names what the negatives change",
            )


def _shared(key: str, templates: Sequence[str]) -> set[Variable]:
    """The variables every template of ``key`` names (one is drawn per set: each must vary)."""
    return set.intersection(*(template_vars(key, t) for t in templates))


def _changed(p: Perturbation) -> set[Variable]:
    """The template variables a scene negative changes (``{a.shapes}`` of a question is
    always plural, so a count change leaves it)."""
    if p.target == "relation":
        return {("relation", None)}
    if p.target == "count":
        return {("count", None), ("number", None)}
    if p.target == "objects":
        return {(slot, attr) for slot in "ab" for attr in (*ATTRIBUTES, "shapes")}
    slots, attr = ("ab", p.target) if p.op == "swap" else tuple(p.target.split("."))
    attrs = {attr, "shapes"} if attr == "shape" else {attr}
    return {(slot, a) for slot in slots for a in attrs}


def ask_members(
    plan: Plan, members: Sequence[Assignment], rng: random.Random
) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every member's question and answers (one question template drawn per set); empty
    without ``question:``. Raises Retry when the fills that tell members apart coincide."""
    if not plan.questions:
        return [], []
    template = rng.choice(plan.questions)
    questions = [fill_template(template, m, plural=True) for m in members]
    written = plan.answers or YES_NO[:1]
    answers = [tuple(fill_template(a, m, plural=True) for a in written) for m in members]
    yes_no = get_task(plan.task).generation.asks == "yes_no"
    telling: Sequence[object] = questions if yes_no else answers
    if len(set(telling)) != len(telling):
        raise Retry
    return questions, answers
