"""The caption kind's fast path for large tests (importers write 100,000 examples).

An example of the plain shape (known keys only; a path, one caption, a list of non-empty
negatives, an optional string or integer id and flat scalar tags) is surely valid, so it is
built with one cheap check and each image path resolved once; one doubtful example sends the
whole test through the loader's full validation, whose ``FILE:LINE`` errors stay exact. The
same for examples written inline in YAML and in a JSON Lines file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.parsing.example_fields import (
    ParseContext,
    example_id,
    parse_image,
    parse_tags,
)
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.parsing.line_values import LineList, LineMap
from pytest_vlcheck.tasks.caption.example import CaptionExample, plain_caption_example

if TYPE_CHECKING:
    from pytest_vlcheck.images.refs import ImageRef

_CAPTION_KEYS = frozenset({"image", "caption", "negatives", "id", "tags"})
_SCALARS = (str, int, float)
_LISTS = (list, LineList)
_MAPPINGS = (dict, LineMap)
_NO_ID = object()


def plain_caption_examples(
    context: ParseContext, test_id: str, raws: Sequence[Any], lines: Sequence[int]
) -> tuple[CaptionExample, ...] | None:
    """The examples of a caption test that all have the plain shape, built directly; None
    for anything else (the loader then validates every example in full)."""
    images: dict[str, ImageRef] = {}
    ids: set[str] = set()
    examples = []
    for index, raw in enumerate(raws):
        if not _plain_caption(raw):
            return None
        line = lines[index]
        written = raw.get("id", _NO_ID)
        if written is _NO_ID:
            example = example_id(Fields(context.path, raw, _where(index, test_id), line))
        elif (type(written) is str and written) or type(written) is int:
            example = str(written)
        else:
            return None
        if example in ids:
            return None
        ids.add(example)
        image = raw["image"]
        ref = images.get(image)
        if ref is None:
            ref = images[image] = parse_image(context, image, line, "'image'")
        tags = (
            parse_tags(Fields(context.path, raw, _where(index, test_id), line))
            if "tags" in raw
            else {}
        )
        negatives = tuple(raw["negatives"])
        examples.append(
            plain_caption_example(example, ref, (raw["caption"],), negatives, tags, line)
        )
    return tuple(examples)


def _where(index: int, test_id: str) -> str:
    return f"example {index + 1} of test '{test_id}'"


def _plain_caption(raw: Mapping[str, Any]) -> bool:
    """Known keys only; a path, a caption, negatives and flat tags that are surely valid."""
    if type(raw) not in _MAPPINGS:
        return False
    negatives = raw.get("negatives")
    image, caption = raw.get("image"), raw.get("caption")
    if not (
        type(negatives) in _LISTS
        and negatives
        and type(image) is str
        and type(caption) is str
        and image.strip()
        and caption.strip()
        and raw.keys() <= _CAPTION_KEYS
    ):
        return False
    for negative in negatives:
        if type(negative) is not str or not negative.strip():
            return False
    if "tags" not in raw:
        return True
    tags = raw["tags"]
    return type(tags) in _MAPPINGS and all(type(v) in _SCALARS for v in tags.values())
