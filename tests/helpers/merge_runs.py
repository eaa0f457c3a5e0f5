"""A second checklist and two models: the runs ``vlcheck merge`` and xdist tests compare."""

from __future__ import annotations

MODELS = ("--vl-model=py:colour_model:make", "--vl-model=second=py:colour_model:make")
SECOND = """\
vlcheck: 1
tests:
  - id: green
    capability: attribute/color
    task: caption
    threshold: 0.5
    all_of: pair
    examples:
      - {image: images/green.png, caption: green, negatives: [red], tags: {pair: p1, shade: light}}
      - {image: images/green.png, caption: a green one, negatives: [a red one],
         tags: {pair: p1, shade: light}}
      - {image: images/blue.png, caption: a blue one, negatives: [one blue a],
         tags: {pair: p2, shade: dark}}
      - {image: images/blue.png, caption: blue sky, negatives: [sky blue],
         tags: {pair: p2, shade: light}}
"""
# green: both right on green.png; blue.png's two negatives reorder their captions' words, so
# the colour model ties them (wrong). By hand: p = 1/2, per image S - m p = +1 and -1, DEFF =
# 2 / (4 * 1/4) = 2; pair p1 (light) right, p2 (dark and light: mixed) wrong.
