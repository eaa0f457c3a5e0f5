"""What each example asks of a model: a grid of images x texts, all of whose pairs are scored."""

from __future__ import annotations

from pytest_vlcheck.checklist.schema import (
    CaptionExample,
    Example,
    GroupExample,
    ImageExample,
)
from pytest_vlcheck.images.refs import ImageRef


def example_grid(example: Example) -> tuple[tuple[ImageRef, ...], tuple[str, ...]]:
    """The images (rows) and texts (columns) of an example, the true ones first.

    caption: one image x (true caption, negatives...); image: (true image, distractors...) x
    prompts; group: (image 0, image 1) x (caption 0, caption 1); match: one image x one caption.
    """
    if isinstance(example, CaptionExample):
        return (example.image,), (example.caption, *example.negatives)
    if isinstance(example, ImageExample):
        return (example.image, *example.distractors), example.texts
    if isinstance(example, GroupExample):
        return example.images, example.captions
    return (example.image,), (example.caption,)
