"""The pixel cache: a new checkpoint of a known architecture reads the pixels an earlier run
prepared, with results bit for bit those of an uncached run; a changed transform or image
file misses; damaged entries and files are dropped with a warning, never trusted."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.model_builders import build_open_clip, write_colour_squares
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.engine.scores.embedding_cache import DB_NAME, CacheWarning
from pytest_vlcheck.engine.scores.pixel_cache import PIXELS_DB, PixelCache, transform_namespace
from pytest_vlcheck.models.pixels.compact import split_transform

NS = "pixels|test"


def _pixels(seed: int, size: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)


def test_round_trip_is_exact_writeable_and_compressed(tmp_path: Path) -> None:
    flat = np.full((224, 224, 3), 7, dtype=np.uint8)  # a rendered scene: flat colours
    items = {"noise": _pixels(0), "flat": flat}
    with PixelCache(tmp_path) as cache:
        cache.put_many(NS, items)
        found = cache.get_many(NS, ["noise", "flat", "absent"])
        assert found.keys() == {"noise", "flat"}
        for key, pixels in found.items():
            assert pixels.dtype == np.uint8 and pixels.flags.writeable
            assert pixels.flags.c_contiguous and np.array_equal(pixels, items[key])
        assert cache.stored_bytes() < flat.nbytes // 50  # the bound counts the disk's bytes
    assert (tmp_path / PIXELS_DB).is_file() and not (tmp_path / DB_NAME).exists()


@pytest.mark.parametrize(
    "corruption",
    [
        "UPDATE vectors SET data = zeroblob(length(data)) WHERE key = 'k1'",
        "UPDATE vectors SET data = substr(data, 1, 5) WHERE key = 'k1'",
        "UPDATE vectors SET shape = '9,9,3' WHERE key = 'k1'",
        "UPDATE vectors SET dtype = '<f4' WHERE key = 'k1'",
    ],
    ids=["zeroed", "truncated", "wrong-shape", "wrong-format"],
)
def test_a_damaged_entry_is_dropped_with_a_warning(tmp_path: Path, corruption: str) -> None:
    cache = PixelCache(tmp_path)
    cache.put_many(NS, {"k0": _pixels(0), "k1": _pixels(1)})
    with sqlite3.connect(tmp_path / PIXELS_DB) as db:
        db.execute(corruption)
    with pytest.warns(CacheWarning, match="1 damaged pixel cache entries dropped"):
        assert set(cache.get_many(NS, ["k0", "k1"])) == {"k0"}
    with sqlite3.connect(tmp_path / PIXELS_DB) as db:
        assert db.execute("SELECT count(*) FROM vectors WHERE key = 'k1'").fetchone() == (0,)


def _scorer(*steps: Any, mean: float = 0.5) -> Any:
    from torchvision import transforms

    compose = transforms.Compose(
        [*steps, transforms.ToTensor(), transforms.Normalize([mean] * 3, [0.25] * 3)]
    )
    return type("Scorer", (), {"compact": split_transform(compose)})()


def test_every_part_of_the_transform_names_its_own_pixels() -> None:
    from torchvision.transforms import CenterCrop, InterpolationMode, Resize

    bicubic = InterpolationMode.BICUBIC
    base = _scorer(Resize(224, bicubic), CenterCrop(224))
    namespaces = [
        transform_namespace(base, "cpu"),
        transform_namespace(base, "gpu"),
        transform_namespace(_scorer(Resize(256, bicubic), CenterCrop(224)), "cpu"),
        transform_namespace(
            _scorer(Resize(224, InterpolationMode.BILINEAR), CenterCrop(224)), "cpu"
        ),
        transform_namespace(_scorer(Resize(224, bicubic), CenterCrop(200)), "cpu"),
        transform_namespace(_scorer(Resize(224, bicubic), CenterCrop(224), mean=0.4), "cpu"),
    ]
    assert len(set(namespaces)) == len(namespaces)
    again = _scorer(Resize(224, bicubic), CenterCrop(224))
    assert transform_namespace(again, "cpu") == namespaces[0]  # another process, same name
    assert transform_namespace(object(), "cpu") is None  # no compact form: nothing cached


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two checkpoints of one architecture (tiny open_clip, other seeds)."""
    out = []
    for seed in (0, 1):
        config, weights = build_open_clip(tmp_path_factory.mktemp(f"clip{seed}"), seed=seed)
        out.append(f"open_clip:{config}@{weights}")
    return out


def _run(spec: str, cache: Path | None, **options: Any) -> tuple[list, Any]:
    where = {"no_cache": True} if cache is None else {"cache_dir": str(cache)}
    run = evaluate(spec, "checks.yaml", name="m", **where, **options)
    return run.to_json()["results"], run.stats["m"]


def _image_vectors(cache: Path) -> dict[str, bytes]:
    """Every image embedding in the cache, by namespace and content key, as stored."""
    with sqlite3.connect(cache / DB_NAME) as db:
        rows = db.execute(
            "SELECT n.name, v.key, v.data FROM vectors v JOIN namespaces n ON n.id = v.namespace"
        ).fetchall()
    return {f"{name}/{key}": data for name, key, data in rows if name.startswith("image|")}


def test_a_second_checkpoint_reads_the_pixels_with_the_same_results(
    specs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    first, first_stats = _run(specs[0], tmp_path / "c")
    assert (first_stats.images_prepared, first_stats.images_from_disk) == (3, 0)
    second, stats = _run(specs[1], tmp_path / "c")
    assert (stats.images_prepared, stats.images_from_disk, stats.images_encoded) == (0, 3, 3)
    assert second == _run(specs[1], None)[0]  # results as uncached, bit for bit
    assert first == _run(specs[0], None)[0]
    _run(specs[1], tmp_path / "fresh")  # the same checkpoint preparing its own pixels
    fresh = _image_vectors(tmp_path / "fresh")
    assert fresh and _image_vectors(tmp_path / "c").items() >= fresh.items()

    Image.new("RGB", (64, 64), (200, 40, 40)).save(tmp_path / "red.png")  # another red
    (tmp_path / "c" / DB_NAME).unlink()  # new weights again: every image is encoded
    changed, stats = _run(specs[1], tmp_path / "c")
    assert (stats.images_prepared, stats.images_from_disk) == (1, 2)
    assert changed == _run(specs[1], None)[0]


@pytest.mark.parametrize("fault", ["truncated", "unwritable"])
def test_a_damaged_or_unwritable_pixel_cache_warns_and_the_run_goes_on(
    specs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    write_colour_squares(tmp_path)
    monkeypatch.chdir(tmp_path)
    expected, _ = _run(specs[0], tmp_path / "c")
    path = tmp_path / "c" / PIXELS_DB
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if fault == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
        match = "not a usable pixel cache"
    else:  # a folder where the database should be: SQLite cannot open or create it
        path.unlink()
        path.mkdir()
        match = "pixel cache disabled for this run"
    (tmp_path / "c" / DB_NAME).unlink()
    with pytest.warns(CacheWarning, match=match):
        results, stats = _run(specs[0], tmp_path / "c")
    assert results == expected and stats.images_from_disk == 0 and stats.images_prepared == 3
