"""Large tests' examples -> JSON Lines files beside the checklist YAML (``vlcheck import``).

A test of 100,000 examples collects faster and in less memory from JSON Lines than inline
(``benchmarks/large_suite_collection.py``), and other tools stream such a file line by line;
a small test stays inline, where a reader sees its examples with the test. The loader reads
either form to the same examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.checklist.jsonl import SUFFIX

JSONL_ABOVE = 10_000
"""With ``--jsonl auto`` (the default), a test of more examples than this has them written to
a JSON Lines file."""
MODES = ("auto", "always", "never")


@dataclass(frozen=True)
class ExamplesFile:
    """One test's examples as JSON Lines text, to be written beside the YAML as ``name``."""

    name: str
    test_id: str
    text: str
    count: int


def _moves(count: int, mode: str) -> bool:
    """Whether a test of ``count`` examples has them written as JSON Lines under ``mode``."""
    if mode == "auto":
        return count > JSONL_ABOVE
    return mode == "always" and count > 0


def split_examples(
    doc: Mapping[str, Any], stem: str, mode: str
) -> tuple[dict[str, Any], list[ExamplesFile]]:
    """``doc`` with the examples of each test ``mode`` selects replaced by the name of a JSON
    Lines file (``STEM.TEST_ID.jsonl``, beside the YAML), and those files."""
    from pytest_vlcheck.checklist.loader import TEST_ID  # the loader is heavy; --help is not

    files: list[ExamplesFile] = []
    taken: set[str] = set()
    tests = []
    for index, test in enumerate(doc.get("tests") or []):
        examples = test.get("examples") if isinstance(test, Mapping) else None
        if not isinstance(examples, list) or not _moves(len(examples), mode):
            tests.append(test)
            continue
        test_id = str(test.get("id"))
        safe = test_id if re.fullmatch(TEST_ID, test_id) else str(index + 1)  # not a path
        name = _file_name(stem, safe, taken)
        files.append(ExamplesFile(name, test_id, jsonl_text(examples), len(examples)))
        tests.append({**test, "examples": name})
    return ({**doc, "tests": tests} if files else dict(doc)), files


def jsonl_text(examples: list[Any]) -> str:
    """One compact JSON object per line, UTF-8 text kept as written."""
    return "".join(
        json.dumps(example, ensure_ascii=False, separators=(",", ":")) + "\n"
        for example in examples
    )


def _file_name(stem: str, test_id: str, taken: set[str]) -> str:
    """``STEM.TEST_ID.jsonl``, numbered when a case-insensitive file system would see the
    name twice (test ids ``Color`` and ``color``)."""
    name = f"{stem}.{test_id}{SUFFIX}"
    number = 1
    while name.casefold() in taken:
        number += 1
        name = f"{stem}.{test_id}-{number}{SUFFIX}"
    taken.add(name.casefold())
    return name
