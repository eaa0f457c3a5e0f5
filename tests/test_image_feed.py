"""The image feed's memo of preprocessed images: a live model's runner keeps them across a
training loop's calls within a byte budget, least recently used out first."""

from __future__ import annotations

import numpy as np
from PIL import Image

from pytest_vlcheck.engine.image_feed import ImageFeed
from pytest_vlcheck.engine.stats import ScoringStats
from pytest_vlcheck.images.refs import ImageRef


def _feed(budget: int) -> tuple[ImageFeed, list[str]]:
    decoded: list[str] = []

    def load(ref: ImageRef) -> Image.Image:
        decoded.append(ref.location)
        return Image.new("RGB", (2, 2))

    return ImageFeed(load, None, ScoringStats(), memo_bytes=budget), decoded


def _pass(feed: ImageFeed, names: list[str]) -> list[np.ndarray]:
    refs = [ImageRef("file", name, name) for name in names]

    def preprocess(image: Image.Image) -> np.ndarray:
        return np.zeros(100, dtype=np.uint8)  # 100 bytes each

    def user_code(method, function, *args):
        return function(*args)

    out = []
    for _, items in feed.loaded_batches([refs], preprocess, user_code):
        out += items
    return out


def test_kept_images_are_not_decoded_again_within_the_budget() -> None:
    feed, decoded = _feed(budget=250)  # room for two
    _pass(feed, ["a.png", "b.png"])
    _pass(feed, ["a.png", "b.png"])
    assert decoded == ["a.png", "b.png"]
    _pass(feed, ["c.png"])  # evicts a, the least recently used
    _pass(feed, ["b.png", "a.png"])
    assert decoded == ["a.png", "b.png", "c.png", "a.png"]


def test_no_budget_keeps_nothing_and_forgetting_empties_the_memo() -> None:
    feed, decoded = _feed(budget=0)
    _pass(feed, ["a.png"])
    _pass(feed, ["a.png"])
    assert decoded == ["a.png", "a.png"]
    feed, decoded = _feed(budget=1000)
    _pass(feed, ["a.png"])
    feed.forget_preprocessed()
    _pass(feed, ["a.png"])
    assert decoded == ["a.png", "a.png"]
