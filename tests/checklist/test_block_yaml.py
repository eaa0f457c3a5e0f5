"""The block YAML reader gives what the event path gives (values, every line), or steps aside.

``block_yaml.build_block`` reads the line-shaped YAML checklists are written in; for any
text it is unsure of it raises ``NotPlain`` and the event path (then the full loader) reads
it. So for every text: either ``NotPlain``, or exactly the event path's ``LineMap``/
``LineList`` values with the same lines; and where the event path refuses a text (a feature
or an error), so does the block reader.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_yaml_fast_path import NOT_PLAIN, PLAIN_TEXTS, examples_yaml, shape

from pytest_vlcheck.checklist.writer import dump_checklist
from pytest_vlcheck.parsing import yaml_lines
from pytest_vlcheck.parsing.block_yaml import build_block
from pytest_vlcheck.parsing.yaml_events import NotPlain, build_plain

LOADERS = [yaml_lines._BASE, yaml.SafeLoader]
BUNDLED = sorted(Path(__file__).parents[2].glob("checklists*/*.yaml"))


def both(text: str, loader: type = yaml_lines._BASE) -> tuple[Any, Any]:
    """(block reader, event path) on ``text``, each a ``shape`` or ``"NotPlain"``."""
    results = []
    for build in (build_block, build_plain):
        try:
            results.append(shape(build(text, loader)))
        except NotPlain:
            results.append("NotPlain")
    return results[0], results[1]


def agrees(text: str, loader: type = yaml_lines._BASE) -> bool:
    block, events = both(text, loader)
    return block == "NotPlain" or block == events


WRITTEN = dump_checklist(
    {
        "vlcheck": 1,
        "image_root": "img",
        "tests": [
            {
                "id": "color",
                "capability": "attribute/color",
                "task": "caption",
                "threshold": 0.85,
                "hard_threshold": 1,
                "cluster": "set",
                "examples": [
                    {"id": "0", "image": "a b.jpg", "caption": "it's red", "negatives": ["x"]},
                    {
                        "id": 7,
                        "image": {"path": "b.png", "crop": [0, 0.5, 8, 8]},
                        "caption": "a [red] {thing}, with: colon",
                        "negatives": ["yes", "null", "12", "", "#hash", "- dash"],
                        "tags": {"set": "add_att", "n": 3, "ok": True, "none": None},
                    },
                    {"image": "c.png", "caption": "caf\u00e9 \u2713", "negatives": ["d"]},
                ],
            }
        ],
    }
)

FAST = [
    WRITTEN,
    examples_yaml(3),
    PLAIN_TEXTS[0],
    PLAIN_TEXTS[1],
    "a: 1\nb: 2.5\nc: true\nd: ~\ne:\nf: 2001-12-14\ng: 0x1f\nh: '12'\ni: \"q\"\n",
    "top:\n  nested:\n    deep: [1, [2, {k: v}], {}]\n  after: x\nlist:\n- a\n- b\nend: {}\n",
    "tests:\n  - id: a\n    examples:\n    - x\n   \n    - {p: q}\n# at column 0\n  - id: b\n",
    "k: it''s\nq: 'it''s'\nurl: http://x/y#z\ndash: -3\nlist: [a b, 'c, d', \"e\"]\n",
]


@pytest.mark.parametrize("loader", LOADERS, ids=["base", "python"])
@pytest.mark.parametrize("text", FAST)
def test_block_yaml_is_read_with_the_event_paths_values_and_lines(text: str, loader: type) -> None:
    block, events = both(text, loader)
    assert block != "NotPlain"
    assert block == events


UNSURE = [
    "a: value # a comment\n",
    "a: # a comment\n",
    "a: 'q' # c\n",
    "a: [x] # c\n",
    "a: first\n  continued\n",
    "a:\n  just a scalar\n",
    "a:\tb\n",
    "a: b\r\nc: d\r\n",
    "---\na: b\n",
    "a: b\n...\n",
    "%YAML 1.1\n---\na: b\n",
    "a:\n-\n  b: c\n",
    "a:\n- - x\n",
    "a: [x, ]\n",
    "a: [x,\n  y]\n",
    "a: {k:v}\n",
    'a: {"k":1}\n',
    "a: |\n  text\n",
    "a: >\n  text\n",
    'a: "esc\\n"\n',
    "'quoted key': x\n",
    "a: b: c\n",
    "a: x\nb:c\n",
    "a: x\n - b\n",
    "- a\n- b\n",
    "  a: indented root\n",
    "a: [-1]\n",
    "a: \u2028\n",
    "a: 2001-13-45\n",
]


@pytest.mark.parametrize("text", UNSURE)
def test_what_the_block_reader_is_unsure_of_goes_to_the_event_path(text: str) -> None:
    with pytest.raises(NotPlain):
        build_block(text, yaml_lines._BASE)


@pytest.mark.parametrize("text", [*PLAIN_TEXTS, *NOT_PLAIN, *UNSURE[:-1]])
def test_any_text_is_read_as_the_event_path_reads_it_or_not_at_all(text: str) -> None:
    assert agrees(text)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda path: path.name)
def test_the_bundled_checklists_agree(path: Path) -> None:
    assert agrees(path.read_text(encoding="utf-8"))


def test_random_edits_of_a_checklist_agree_or_step_aside() -> None:
    """Characters that mean something to YAML, put anywhere: the block reader never reads a
    text differently from the event path, nor reads one the event path refuses."""
    rng = random.Random(47)
    pieces = [" ", "  ", "-", "- ", ":", ": ", "#", " #", "'", '"', "[", "]", "{", "}", ","]
    pieces += ["\n", "\n  ", "\n- ", "~", "1", "true", "&a", "*a", "!", "|", ">", "?", "x"]
    fast = 0
    for _ in range(600):
        text = WRITTEN
        for _ in range(rng.randint(1, 2)):
            at = rng.randrange(len(text) + 1)
            cut = rng.choice([0, 0, 1])
            text = text[:at] + rng.choice(pieces) + text[at + cut :]
        block, events = both(text)
        assert block == "NotPlain" or block == events, text
        fast += block != "NotPlain"
    assert fast > 100  # most edits still go the fast way: the comparison means something


def test_a_checklist_in_block_yaml_loads_through_the_block_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(examples_yaml(3), encoding="utf-8")

    def refuse(text: str, loader: type) -> Any:
        raise AssertionError("the event path was not needed")

    monkeypatch.setattr(yaml_lines, "build_plain", refuse)
    assert shape(yaml_lines.load_yaml(path)) == shape(
        build_plain(examples_yaml(3), yaml_lines._BASE)
    )
