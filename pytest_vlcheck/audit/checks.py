"""Checks on a test's data: degenerate negatives, duplicates, slices too small to read.

A slice (the examples sharing one tag value, or the whole test) with fewer than ``MIN_SLICE``
examples is flagged: at n = 10 the 95% Wilson interval around a 50% pass rate spans 24-76%,
so such a slice cannot tell a chance-level model from one that passes three times in four.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_vlcheck.audit.subject import AuditSubject, TextChoice, words

MIN_SLICE = 10


@dataclass(frozen=True)
class Finding:
    """One problem in a test: ``flag`` findings make the audit fail under ``--strict``;
    notes are reported only. ``count`` is how many choices or items are affected."""

    kind: str
    message: str
    example_ids: tuple[str, ...]
    count: int
    flag: bool = True


def _unique(ids: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def _negative_findings(choices: Sequence[TextChoice]) -> list[Finding]:
    identical: list[str] = []
    reordered: list[str] = []
    for choice in choices:
        truth = words(choice.true_text)
        for other in choice.other_texts:
            mine = words(other)
            if mine == truth:
                identical.append(choice.example_id)
            elif Counter(mine) == Counter(truth):
                reordered.append(choice.example_id)
    found = []
    if identical:
        found.append(
            Finding(
                "identical_negative",
                f"{len(identical)} negative(s) identical to the true caption (lower-cased, "
                "punctuation removed): no model can pass these examples",
                _unique(identical),
                len(identical),
            )
        )
    if reordered:
        found.append(
            Finding(
                "reordered_negative",
                f"{len(reordered)} negative(s) only reorder the true caption's words: an "
                "order-blind (bag-of-words) model can only tie on them, and a tie fails",
                _unique(reordered),
                len(reordered),
                flag=False,
            )
        )
    return found


def _duplicate_findings(choices: Sequence[TextChoice]) -> list[Finding]:
    owners: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = defaultdict(list)
    for choice in choices:
        key = (choice.true_text, tuple(sorted(choice.other_texts)), choice.image_keys)
        owners[key].append(choice.example_id)
    duplicated = [ids for ids in owners.values() if len(set(ids)) > 1]
    repeated_images = [c.example_id for c in choices if len(set(c.image_keys)) < len(c.image_keys)]
    found = []
    if duplicated:
        ids = _unique([i for group in duplicated for i in group])
        found.append(
            Finding(
                "duplicate_examples",
                f"{len(duplicated)} example(s) appear more than once (same texts and images; "
                f"{len(ids)} examples involved): they count twice in the pass rate",
                ids,
                len(ids),
            )
        )
    if repeated_images:
        ids = _unique(repeated_images)
        found.append(
            Finding(
                "duplicate_distractor_images",
                f"{len(ids)} example(s) use the same image twice (a distractor equal to the "
                "true image or to another distractor): the choice there is a tie",
                ids,
                len(ids),
            )
        )
    return found


def _slice_findings(choices: Sequence[TextChoice]) -> list[Finding]:
    examples = {c.example_id: c.tags for c in choices}
    found = []
    if len(examples) < MIN_SLICE:
        found.append(
            Finding(
                "small_test",
                f"only {len(examples)} examples (fewer than {MIN_SLICE}): the 95% interval "
                "of the pass rate is too wide to tell a pass from a fail",
                (),
                len(examples),
            )
        )
    sizes: Counter[tuple[str, str]] = Counter(
        (tag, value) for tags in examples.values() for tag, value in tags.items()
    )
    small = sorted(f"{tag}={value} (n={n})" for (tag, value), n in sizes.items() if n < MIN_SLICE)
    if small:
        found.append(
            Finding(
                "small_slices",
                f"{len(small)} slice(s) with fewer than {MIN_SLICE} examples: "
                + ", ".join(small[:8])
                + (f", ... (+{len(small) - 8})" if len(small) > 8 else ""),
                (),
                len(small),
            )
        )
    return found


def structural_findings(subject: AuditSubject) -> list[Finding]:
    """Every data check on one test, in a fixed order."""
    choices = subject.choices
    return [
        *_negative_findings(choices),
        *_duplicate_findings(choices),
        *_slice_findings(choices),
    ]
