"""The YAML of small checklists for end-to-end tests: tests of one capability over a few
examples, written as the flow mappings a user would write."""

from __future__ import annotations

RED = "{id: r, image: red.png, caption: a red square, negatives: [a blue square]}"
BLUE = "{id: b, image: blue.png, caption: a blue square, negatives: [a red square]}"


def checklist(
    *examples: str, ids: tuple[str, ...] = ("color",), task: str = "caption", extra: str = ""
) -> str:
    """A checklist of one test per id (capability ``attribute/color``, threshold 0.5 unless
    ``extra``, test-level lines, says otherwise), each holding ``examples`` (default: RED)."""
    rows = "".join(f"      - {example}\n" for example in examples or (RED,))
    settings = extra if "threshold:" in extra else f"    threshold: 0.5\n{extra}"
    return "vlcheck: 1\ntests:\n" + "".join(
        f"  - id: {test}\n    capability: attribute/color\n    task: {task}\n{settings}"
        f"    examples:\n{rows}"
        for test in ids
    )
