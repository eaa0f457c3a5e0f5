"""The on-disk embedding cache and the content keys it is addressed by."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_vlcheck import bounds
from pytest_vlcheck.engine.scores import embedding_cache as cache_module
from pytest_vlcheck.engine.scores.content_keys import (
    image_key,
    namespace,
    pair_key,
    text_key,
)
from pytest_vlcheck.engine.scores.embedding_cache import (
    DB_NAME,
    CacheWarning,
    EmbeddingCache,
    FileDigest,
)
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable
from pytest_vlcheck.models.hashing import fingerprint_path

NS = "image|sha256:abc|224-bicubic"


def _vectors(count: int, dim: int = 8, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"k{i}": rng.standard_normal(dim).astype(np.float32) for i in range(count)}


def _age(path: Path, seconds: float) -> None:
    """Move a file's mtime into the past, out of the racy window."""
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_round_trip_is_bit_exact_and_namespaced(tmp_path: Path) -> None:
    items = _vectors(5)
    items["matrix"] = np.arange(6, dtype=np.float32).reshape(2, 3)
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many(NS, items)
        got = cache.get_many(NS, [*items, "absent"])
        assert cache.get_many("text|sha256:abc|", list(items)) == {}
    assert set(got) == set(items)
    for key, vector in items.items():
        assert got[key].dtype == np.float32
        assert got[key].shape == vector.shape
        assert got[key].tobytes() == vector.tobytes()


def test_vectors_survive_a_new_process_handle(tmp_path: Path) -> None:
    items = _vectors(3)
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many(NS, items)
    again = EmbeddingCache(tmp_path)
    assert again.get_many(NS, list(items))["k2"].tobytes() == items["k2"].tobytes()
    assert again.stored_bytes() == 3 * 8 * 4


@pytest.mark.parametrize(
    "corruption",
    [
        "UPDATE vectors SET data = zeroblob(length(data)) WHERE key = 'k1'",
        "UPDATE vectors SET data = substr(data, 1, 16) WHERE key = 'k1'",
        "UPDATE vectors SET shape = '4' WHERE key = 'k1'",
        "UPDATE vectors SET dtype = '<f8' WHERE key = 'k1'",
    ],
    ids=["flipped", "truncated", "wrong-shape", "wrong-dtype"],
)
def test_a_corrupt_entry_is_a_miss_and_is_deleted(tmp_path: Path, corruption: str) -> None:
    items = _vectors(3)
    cache = EmbeddingCache(tmp_path)
    cache.put_many(NS, items)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute(corruption)
    assert set(cache.get_many(NS, list(items))) == {"k0", "k2"}
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM vectors WHERE key = 'k1'").fetchone() == (0,)
    cache.put_many(NS, {"k1": items["k1"]})
    assert cache.get_many(NS, ["k1"])["k1"].tobytes() == items["k1"].tobytes()


def test_eviction_drops_least_recently_accessed_rows(tmp_path: Path) -> None:
    row = 8 * 4
    cache = EmbeddingCache(tmp_path, max_bytes=10 * row)
    cache.put_many(NS, _vectors(10))
    with sqlite3.connect(tmp_path / DB_NAME) as db:  # k0 oldest ... k9 newest
        for index in range(10):
            db.execute("UPDATE vectors SET accessed = ? WHERE key = ?", (1000 + index, f"k{index}"))
    assert set(cache.get_many(NS, ["k0"])) == {"k0"}  # a read makes k0 the most recent
    cache.put_many(NS, {"new": np.ones(8, dtype=np.float32)})
    left = set(cache.get_many(NS, [*_vectors(10), "new"]))
    # 11 rows > 10: evict down to 90% (9 rows): k1 and k2 go, the re-read k0 stays.
    assert left == {"k0", *(f"k{i}" for i in range(3, 10)), "new"}
    assert cache.stored_bytes() == 9 * row


@pytest.mark.parametrize(
    "content",
    [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\x01" * 90],  # garbage, torn
)
def test_a_corrupt_database_file_is_moved_aside_and_rebuilt(tmp_path: Path, content) -> None:
    (tmp_path / DB_NAME).write_bytes(content)
    with pytest.warns(CacheWarning, match="not a usable embedding cache") as caught:
        cache = EmbeddingCache(tmp_path)
        cache.put_many(NS, _vectors(2))
        assert set(cache.get_many(NS, ["k0", "k1"])) == {"k0", "k1"}
    assert len(caught) == 1
    assert f"moved it to {tmp_path / (DB_NAME + '.unusable')}" in str(caught[0].message)
    assert (tmp_path / f"{DB_NAME}.unusable").read_bytes() == content  # kept, to look at
    assert cache.enabled


def test_an_unwritable_root_warns_and_runs_uncached(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.warns(CacheWarning):
        cache = EmbeddingCache(blocker / "cache")
    cache.put_many(NS, _vectors(1))
    assert cache.get_many(NS, ["k0"]) == {}


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from pytest_vlcheck.engine.scores.embedding_cache import EmbeddingCache

    root, worker = sys.argv[1], int(sys.argv[2])
    cache = EmbeddingCache(root)
    for batch in range(40):
        items = {f"w{worker}-{batch}-{i}": np.full(16, worker * 1000 + batch, np.float32)
                 for i in range(25)}
        items.update({f"shared-{batch}-{i}": np.full(16, batch, np.float32) for i in range(25)})
        cache.put_many("image|fp|pre", items)
        assert len(cache.get_many("image|fp|pre", list(items))) == len(items)
        # namespaces made by both processes at once keep their rows apart
        cache.put_many(f"text|b{batch % 5}|w{worker}", {"k": np.full(16, worker * 1000 + batch)})
    assert cache.enabled
    """
)


def test_two_processes_fill_one_cache_at_once(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error", str(script), str(tmp_path / "c"), str(worker)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for worker in (1, 2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    cache = EmbeddingCache(tmp_path / "c")
    keys = [f"w{w}-{b}-{i}" for w in (1, 2) for b in range(40) for i in range(25)]
    keys += [f"shared-{b}-{i}" for b in range(40) for i in range(25)]
    got = cache.get_many("image|fp|pre", keys)
    assert len(got) == len(keys) == 3000
    assert got["w2-39-0"][0] == 2039.0
    for worker in (1, 2):
        for group in range(5):
            got = cache.get_many(f"text|b{group}|w{worker}", ["k"])
            assert got["k"][0] == worker * 1000 + 35 + group
    assert cache.stored_bytes() == (3000 + 10) * 16 * 4


def test_file_digest_hashes_an_unchanged_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = tmp_path / "a.jpg"
    image.write_bytes(b"pixels" * 100)
    _age(image, 60)
    calls: list[Path] = []
    real = cache_module.sha256_file
    monkeypatch.setattr(cache_module, "sha256_file", lambda p: calls.append(p) or real(p))
    cache = EmbeddingCache(tmp_path / "c")
    first = cache.file_digest(image)
    assert EmbeddingCache(tmp_path / "c").file_digest(image) == first
    assert first == hashlib.sha256(b"pixels" * 100).hexdigest()
    assert len(calls) == 1


def test_a_changed_file_at_the_same_path_is_rekeyed(tmp_path: Path) -> None:
    image = tmp_path / "a.jpg"
    image.write_bytes(b"A" * 64)
    _age(image, 60)
    old_mtime = image.stat().st_mtime_ns
    cache = EmbeddingCache(tmp_path / "c")
    ref = ImageRef("file", "a.jpg", str(image))
    before = image_key(ref, cache.file_digest)
    image.write_bytes(b"B" * 64)  # same size; then the old mtime is put back
    os.utime(image, ns=(old_mtime, old_mtime))
    assert image_key(ref, cache.file_digest) != before


def test_a_freshly_written_file_is_not_indexed(tmp_path: Path) -> None:
    image = tmp_path / "fresh.jpg"
    image.write_bytes(b"x")
    _age(image, -60)  # stamped a minute ahead: racy however long opening the cache takes
    cache = EmbeddingCache(tmp_path / "c")
    cache.file_digest(image)
    with sqlite3.connect(tmp_path / "c" / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM files").fetchone() == (0,)


def test_text_key_is_sha256_of_utf8() -> None:
    assert text_key("a red apple") == hashlib.sha256(b"a red apple").hexdigest()
    assert text_key("café") == hashlib.sha256("café".encode()).hexdigest()
    assert text_key("a red apple ") != text_key("a red apple")


def test_image_keys_follow_content_not_location(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    for folder in (tmp_path, tmp_path / "x"):
        (folder / "img.png").write_bytes(b"same bytes")
    (tmp_path / "other.png").write_bytes(b"other bytes")
    here = ImageRef("file", "img.png", str(tmp_path / "img.png"))
    there = ImageRef("file", "x/img.png", str(tmp_path / "x" / "img.png"))
    other = ImageRef("file", "other.png", str(tmp_path / "other.png"))
    cropped = ImageRef("file", "img.png", str(tmp_path / "img.png"), (0, 0, 5, 5))
    relative = ImageRef("file", "img.png", str(tmp_path / "img.png"), (0, 0, 5, 5), True)
    keys = [image_key(ref) for ref in (here, there, other, cropped, relative)]
    assert keys[0] == keys[1]
    assert len(set(keys)) == 4


def test_scene_and_url_keys() -> None:
    scene = ImageRef("scene", '{"a":1}', '{"a":1}')
    assert image_key(scene) == image_key(ImageRef("scene", "ignored", '{"a":1}'))
    assert image_key(scene) != image_key(ImageRef("scene", '{"a":2}', '{"a":2}'))
    url = "https://example.org/a.jpg"
    plain, pinned = ImageRef("url", url, url), ImageRef("url", url, url, sha256="ab" * 32)
    assert image_key(plain) != image_key(pinned)
    assert plain.key != pinned.key  # loaded (and checked against the pin) separately


def test_a_missing_file_is_unavailable(tmp_path: Path) -> None:
    ref = ImageRef("file", "gone.jpg", str(tmp_path / "gone.jpg"))
    with pytest.raises(ImageUnavailable, match="cannot read"):
        image_key(ref)


def test_pair_key_and_namespace() -> None:
    assert pair_key("i", "t") == hashlib.sha256(b"i|t").hexdigest()
    assert pair_key("i", "t") != pair_key("t", "i")
    assert namespace("fp", "224", "text") == "text|fp|224"
    with pytest.raises(ValueError, match="unknown cache kind"):
        namespace("fp", "224", "audio")
    with pytest.raises(ValueError, match="fingerprint"):
        namespace("", "224", "image")


def test_fingerprints_through_the_stat_index_equal_direct_ones(tmp_path: Path) -> None:
    weights = tmp_path / "model" / "weights.safetensors"
    weights.parent.mkdir()
    weights.write_bytes(b"\x00\x01" * 1000)
    (tmp_path / "model" / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "model" / "notes.md").write_text("ignored", encoding="utf-8")
    for file in (weights, tmp_path / "model" / "config.json"):
        _age(file, 60)
    cache = EmbeddingCache(tmp_path / "c")
    assert fingerprint_path(weights, cache.file_digest) == fingerprint_path(weights)
    assert fingerprint_path(weights.parent, cache.file_digest) == fingerprint_path(weights.parent)
    with pytest.raises(FileNotFoundError):
        fingerprint_path(tmp_path / "nothing", cache.file_digest)


def test_file_digests_answer_per_path_and_index_in_one_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / f"{name}.jpg" for name in "abc"]
    for path in files:
        path.write_bytes(path.name.encode() * 50)
        _age(path, 60)
    loop = tmp_path / "loop.jpg"
    loop.symlink_to(loop)
    calls: list[Path] = []
    real = cache_module.sha256_file
    monkeypatch.setattr(cache_module, "sha256_file", lambda p: calls.append(p) or real(p))
    cache = EmbeddingCache(tmp_path / "c")
    asked = [files[0], tmp_path / "missing.jpg", files[1], loop, files[0], files[2]]
    got = cache.file_digests(asked)
    assert [g for g in got if isinstance(g, FileDigest)] == [
        FileDigest(hashlib.sha256(p.name.encode() * 50).hexdigest(), None)  # no image: no pixels
        for p in asked
        if p.stem in "abc"
    ]
    assert isinstance(got[1], FileNotFoundError)
    assert isinstance(got[3], OSError)  # a symlink loop (ELOOP)
    assert EmbeddingCache(tmp_path / "c").file_digests(files) == [got[0], got[2], got[5]]
    assert sorted(calls) == sorted([files[0], files[1], files[0], files[2]])  # none re-hashed


def test_an_image_files_pixel_count_is_indexed_with_its_digest(tmp_path: Path) -> None:
    image = tmp_path / "wide.png"
    Image.new("RGB", (30, 20)).save(image)
    _age(image, 60)
    first = EmbeddingCache(tmp_path / "c").file_digests([image])
    assert first == EmbeddingCache(tmp_path / "c").file_digests([image])  # from the index
    assert first[0].pixels == 600


def test_an_older_cache_schema_is_rebuilt_and_a_newer_one_left_alone(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("CREATE TABLE vectors (namespace TEXT, key TEXT, PRIMARY KEY (namespace, key))")
        db.execute("PRAGMA user_version = 2")
    cache = EmbeddingCache(tmp_path)
    cache.put_many(NS, _vectors(3))
    assert sorted(cache.get_many(NS, ["k0", "k1", "k2"])) == ["k0", "k1", "k2"]
    cache.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute(f"PRAGMA user_version = {cache_module.SCHEMA_VERSION + 1}")
    with pytest.warns(CacheWarning, match="is newer than this vlcheck's"):
        newer = EmbeddingCache(tmp_path)
    assert not newer.enabled
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (3,)  # left as it was


def test_float64_values_keep_every_bit(tmp_path: Path) -> None:
    """A prior's NLLs are float64: a re-run must print the first run's perplexities."""
    values = {"a": np.array([1 / 3]), "nan": np.array([np.nan]), "f4": np.array([1 / 3], "f4")}
    with EmbeddingCache(tmp_path) as cache:
        cache.put_many(NS, values)
    got = EmbeddingCache(tmp_path).get_many(NS, list(values))
    assert got["a"].dtype == np.float64 and got["a"].tobytes() == values["a"].tobytes()
    assert np.isnan(got["nan"][0]) and got["f4"].dtype == np.float32


@pytest.mark.parametrize("text", ["0", "0.5", "0.9B", "lots", "-1M"])
def test_a_cache_size_below_one_byte_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected a size from 1 byte to 1024TB"):
        bounds.size(text, 1024**5)


def test_processes_opening_a_fresh_cache_at_once_all_keep_it(tmp_path: Path) -> None:
    """Switching a new file to WAL takes a lock SQLite's busy timeout does not wait for: two
    xdist workers or torchrun ranks opening a fresh cache together left it off in one of
    them (threads share the race: 2 in 80 opens failed before)."""
    import threading

    for round_ in range(50):
        root = tmp_path / str(round_)
        start, opened = threading.Barrier(4), []

        def open_cache(
            root: Path = root, start: threading.Barrier = start, opened: list = opened
        ) -> None:
            start.wait()
            opened.append(EmbeddingCache(root))

        threads = [threading.Thread(target=open_cache) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(opened) == 4 and all(cache.enabled for cache in opened), round_
        for cache in opened:
            cache.close()
