"""The image feed's store of preprocessed images: a live model's runner keeps them across a
training loop's calls within a byte budget; over it, the first images of the plan are kept
and the rest prepared again at every call (counted), never an LRU over a scan."""

from __future__ import annotations

import numpy as np
from PIL import Image

from pytest_vlcheck.engine.feed.pipeline import ImageFeed
from pytest_vlcheck.engine.feed.store import ImageStore, nbytes
from pytest_vlcheck.engine.runner.stats import ScoringStats
from pytest_vlcheck.images.refs import ImageRef


def _feed(budget: int) -> tuple[ImageFeed, list[str]]:
    decoded: list[str] = []

    def load(ref: ImageRef) -> Image.Image:
        decoded.append(ref.location)
        return Image.new("RGB", (2, 2))

    feed = ImageFeed(load, None, ScoringStats(), store=ImageStore(budget))
    return feed, decoded


def _pass(feed: ImageFeed, names: list[str], batch: int = 2) -> list[np.ndarray]:
    refs = [ImageRef("file", name, name) for name in names]

    def preprocess(image: Image.Image) -> np.ndarray:
        return np.zeros(100, dtype=np.uint8)  # 100 bytes each

    def user_code(method, function, *args):
        return function(*args)

    batches = [refs[i : i + batch] for i in range(0, len(refs), batch)]
    out = []
    for _, items in feed.loaded_batches(batches, preprocess, user_code):
        out += items
    return out


def test_kept_images_are_not_decoded_again_within_the_budget() -> None:
    feed, decoded = _feed(budget=250)  # room for two
    _pass(feed, ["a.png", "b.png"])
    _pass(feed, ["a.png", "b.png"])
    assert sorted(decoded) == ["a.png", "b.png"]  # decoded once each, by loader threads
    assert (feed.stats.images_prepared, feed.stats.images_recalled) == (2, 2)


def test_over_the_budget_the_first_of_the_plan_are_kept_and_the_rest_recomputed() -> None:
    names = [f"{i}.png" for i in range(7)]
    feed, decoded = _feed(budget=300)  # room for three of seven
    first = _pass(feed, names)
    decoded.clear()
    feed.stats = ScoringStats()
    again = _pass(feed, names)
    assert sorted(decoded) == names[3:]  # exactly the part not kept, every call
    assert (feed.stats.images_prepared, feed.stats.images_recalled) == (4, 3)
    assert feed.store.held == 300 and len(feed.store) == 3
    assert all(np.array_equal(x, y) for x, y in zip(first, again, strict=True))
    decoded.clear()
    _pass(feed, ["new.png", *names])  # a new image does not push a kept one out
    assert sorted(decoded) == sorted(["new.png", *names[3:]])


def test_no_budget_keeps_nothing_and_forgetting_empties_the_store() -> None:
    feed, decoded = _feed(budget=0)
    _pass(feed, ["a.png"])
    _pass(feed, ["a.png"])
    assert decoded == ["a.png", "a.png"]
    feed, decoded = _feed(budget=1000)
    _pass(feed, ["a.png"])
    feed.store.forget()
    assert feed.store.held == 0
    _pass(feed, ["a.png"])
    assert decoded == ["a.png", "a.png"]


def test_sizes_of_arrays_tensors_and_feature_dicts() -> None:
    import torch

    assert nbytes(np.zeros(10, dtype=np.float32)) == 40
    assert nbytes(torch.zeros(3, dtype=torch.uint8)) == 3
    assert nbytes({"pixel_values": torch.zeros(2, 2)}) == 16
    assert nbytes("no size") is None
