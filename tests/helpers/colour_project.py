"""The colour project most end-to-end tests run: three colour squares, the ``py:colour_model:make``
scorer (``colour_scorer``) and a checklist of every task kind over them."""

from __future__ import annotations

import pytest
from PIL import Image

from helpers.colour_scorer import SOURCE

COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}

CHECKLIST = """\
vlcheck: 1
image_root: images
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.6
    examples:
      - {id: r, image: red.png, caption: a red square, negatives: [a green square, a blue square], tags: {hue: warm}}
      - {id: g, image: green.png, caption: a green square, negatives: [a red square], tags: {hue: cold}}
      - {id: b, image: blue.png, caption: a blue square, negatives: [a red square], tags: {hue: cold}}
  - id: hard
    capability: relation/spatial
    task: caption
    threshold: 0.9
    examples:
      - {id: h1, image: red.png, caption: a red square left of a blue one, negatives: [a blue square left of a red one]}
      - {id: h2, image: blue.png, caption: a blue square, negatives: [a red square]}
  - id: pick
    capability: attribute/color
    task: image
    threshold: 1.0
    examples:
      - {text: [a red thing, red], image: red.png, distractors: [green.png, blue.png]}
  - id: pair
    capability: object/colour_pair
    task: group
    criterion: group
    threshold: 1.0
    examples:
      - {images: [red.png, blue.png], captions: [red, blue]}
  - id: itm
    capability: attribute/match
    task: match
    cutoff: 0.5
    threshold: 0.7
    examples:
      - {image: red.png, caption: red, label: match, neg_type: color}
      - {image: red.png, caption: blue, label: no_match, neg_type: color}
      - {image: green.png, caption: green, label: match, neg_type: color}
"""


def colour_project(pytester: pytest.Pytester, checklist: str) -> pytest.Pytester:
    """A project with the three colour squares, the ``py:colour_model:make`` scorer and
    ``checklist`` as ``checks.yaml``."""
    images = pytester.mkdir("images")
    for name, rgb in COLOURS.items():
        Image.new("RGB", (16, 16), rgb).save(images / f"{name}.png")
    pytester.makepyfile(colour_model=SOURCE)
    pytester.makefile(".yaml", checks=checklist)
    pytester.syspathinsert()
    return pytester
