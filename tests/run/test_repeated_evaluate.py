"""What a training loop's repeated ``evaluate`` calls keep between them: the parsed checklists
while their files hold, and one reading of the weights' fingerprint per call."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck import evaluate
from pytest_vlcheck.run.checklists import load_tests


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def _modified(path: Path, seconds_ago: int) -> None:
    """Move the file's modification time: 10 s ago is past the racy window in which a parse
    is not kept; a minute ahead is inside it however long this process is paused."""
    when = time.time_ns() - seconds_ago * 10**9
    os.utime(path, ns=(when, when))


def test_a_checklist_is_parsed_again_only_when_its_file_changed(project: pytest.Pytester) -> None:
    checks = Path("checks.yaml")
    _modified(checks, -60)  # as if just written
    assert load_tests([checks], None)[0] is not load_tests([checks], None)[0]
    _modified(checks, 10)
    first = load_tests([checks], None)
    assert all(a is b for a, b in zip(first, load_tests([checks], None), strict=True))

    text = checks.read_text()
    stamp = os.stat(checks)
    checks.write_text(text.replace("threshold: 0.6", "threshold: 0.7", 1))  # the same size
    os.utime(checks, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # and modification time
    edited = load_tests([checks], None)
    assert edited[0].threshold == 0.7  # the change time moved
    assert load_tests([checks], None)[0] is edited[0]

    Path("new.yaml").write_text(text.replace("threshold: 0.6", "threshold: 0.5", 1))
    Path("new.yaml").replace(checks)  # an editor's atomic save: another inode
    assert load_tests([checks], None)[0].threshold == 0.5


def test_a_changed_json_lines_file_is_read_again(project: pytest.Pytester) -> None:
    examples = Path("colour.jsonl")
    row = {"image": "red.png", "caption": "a red square", "negatives": ["a blue square"]}
    examples.write_text(json.dumps(row) + "\n")
    Path("lines.yaml").write_text(
        "vlcheck: 1\nimage_root: images\ntests:\n  - id: lines\n    capability: attribute/color\n"
        "    task: caption\n    threshold: 0.5\n    examples: colour.jsonl\n"
    )
    (test,) = load_tests([Path("lines.yaml")], None)
    assert len(test.examples) == 1
    examples.write_text(json.dumps(row) + "\n" + json.dumps({**row, "image": "blue.png"}) + "\n")
    (again,) = load_tests([Path("lines.yaml")], None)
    assert len(again.examples) == 2


def test_a_broken_edit_is_reported_not_served_from_memory(project: pytest.Pytester) -> None:
    checks = Path("checks.yaml")
    load_tests([checks], None)
    checks.write_text(checks.read_text().replace("threshold: 0.6", "threshold: lots", 1))
    with pytest.raises(Exception, match=r"checks\.yaml:\d+: .*threshold"):
        load_tests([checks], None)


COUNTING = """
import colour_model

class Counted(colour_model.ColourScorer):
    reads = 0
    version = 1

    @property
    def fingerprint(self):
        Counted.reads += 1
        return f"colour-v{self.version}"
"""


def test_the_fingerprint_is_read_once_per_call(project: pytest.Pytester) -> None:
    """A live model's fingerprint checksums its weights: once per call, not per test and
    cache lookup; a change between calls is still seen (the weights hold still in a call)."""
    project.makepyfile(counting=COUNTING)
    import colour_model
    import counting

    scorer = counting.Counted()
    evaluate(scorer, "checks.yaml", name="m", cache_dir="cache")
    assert counting.Counted.reads == 1
    encoded = colour_model.CALLS["images"]
    run = evaluate(scorer, "checks.yaml", name="m", cache_dir="cache")
    assert counting.Counted.reads == 2 and colour_model.CALLS["images"] == encoded
    scorer.version = 2
    after = evaluate(scorer, "checks.yaml", name="m", cache_dir="cache")
    assert counting.Counted.reads == 3 and colour_model.CALLS["images"] > encoded
    assert {r.fingerprint for r in run.results} == {"colour-v1"}
    assert {r.fingerprint for r in after.results} == {"colour-v2"}
