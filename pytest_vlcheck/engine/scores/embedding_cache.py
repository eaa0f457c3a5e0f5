"""Embeddings on disk, so an unchanged re-run encodes nothing.

Storage engine: one SQLite database (``embeddings.sqlite3`` under the cache root) in WAL
mode. It ships with Python (no new dependency, no native build), every ``put_many`` is one
transaction (an interrupted run leaves each batch complete or absent, never half-written),
and SQLite's file locks plus a busy timeout make it safe for several processes at once
(xdist workers, CI jobs on one runner): WAL lets readers proceed while one writer commits.
LMDB would need a package and a fixed map size; safetensors shards would need our own
locking and compaction. SQLite's locks need a local file system (not NFS); a cache folder
restored from a CI artifact is an ordinary local copy and is fine.

Rows are float32 vectors (float64 for a prior's NLLs, which must not round) as raw
little-endian bytes with their dtype, shape and a blake2b checksum over all three; a row
whose checksum, dtype or length does not match is deleted and reported as a miss, so it is
recomputed and never trusted. No pickle anywhere.

The size bound counts vector bytes (``max_bytes``). Each row has a coarse ``accessed``
time (seconds) that reads refresh at most once per ``ACCESS_GRANULARITY``; when a write
takes the total over the bound, the least recently accessed rows go until it is below
``EVICT_TO`` of the bound. Freed pages are reused by later rows rather than returned to
the operating system.

A small ``meta`` table keeps JSON text per key (what a model is, so a re-run can score
from cached vectors without building it; see ``engine.runner.model_runner``).

The same database holds a stat index (path, size, mtime_ns, inode, ctime_ns -> sha256 and an
image's pixel count) so an unchanged image or weights file is hashed once, while a changed
file at the same path gets a new digest. As in git's racy-clean rule, a file modified within
``RACY_SECONDS`` of being hashed is not indexed (its mtime may not change on a rewrite
within the file system's timestamp granularity).

Any SQLite error (an unwritable folder, a corrupt database file, a full disk) turns the
cache off for the rest of the run with one ``CacheWarning``; the run goes on uncached.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np

from pytest_vlcheck.bounds import DEFAULT_CACHE_BYTES
from pytest_vlcheck.images.loading import header_pixels
from pytest_vlcheck.models.hashing import sha256_file

T = TypeVar("T")

DB_NAME = "embeddings.sqlite3"
SCHEMA_VERSION = 5
ACCESS_GRANULARITY = 60
EVICT_TO = 0.9
RACY_SECONDS = 2.0
BUSY_TIMEOUT_S = 60.0
_DTYPES = ("<f4", "<f8")
HASH_CHUNK = 4 * 1024**2  # bytes of new files hashed per pool task
_SQL_VARS = 500  # keys per IN (...) query, well under SQLite's variable limit

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS namespaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
    """CREATE TABLE IF NOT EXISTS vectors (
        namespace INTEGER NOT NULL, key TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,
        data BLOB NOT NULL, checksum BLOB NOT NULL, nbytes INTEGER NOT NULL,
        accessed INTEGER NOT NULL, UNIQUE (namespace, key))""",
    "CREATE INDEX IF NOT EXISTS vectors_accessed ON vectors (accessed)",
    "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), nbytes INTEGER)",
    "INSERT OR IGNORE INTO totals VALUES (0, 0)",
    """CREATE TRIGGER IF NOT EXISTS vectors_ins AFTER INSERT ON vectors BEGIN
        UPDATE totals SET nbytes = nbytes + NEW.nbytes WHERE id = 0; END""",
    """CREATE TRIGGER IF NOT EXISTS vectors_del AFTER DELETE ON vectors BEGIN
        UPDATE totals SET nbytes = nbytes - OLD.nbytes WHERE id = 0; END""",
    """CREATE TABLE IF NOT EXISTS files (
        path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL,
        pixels INTEGER)""",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)
# A cache of an older schema is dropped and rebuilt (dropping a table drops its triggers and
# indexes). Version 3 made ``vectors`` a rowid table: rows of kilobytes insert 3x faster than
# in a WITHOUT ROWID table, which SQLite advises only for small rows. Version 4 names each
# row's namespace by a small integer: the (namespace, key) index no longer repeats a
# 100-character name per row, and inserts take 40% less time. Version 5 keeps an image
# file's pixel count (from its header) beside its digest, so a cached image is held to the
# pixel limit without being decoded.
_TABLES = ("vectors", "namespaces", "totals", "files", "meta")
# Checkpoint the write-ahead log every ~40 MB rather than SQLite's 4 MB: each checkpoint
# syncs the database file, and a first run writes tens of megabytes of vectors.
_WAL_AUTOCHECKPOINT_PAGES = 10_000


class FileDigest(NamedTuple):
    """A file's sha256 hex and, for an image, its width x height (None: not an image)."""

    sha256: str
    pixels: int | None


class CacheWarning(UserWarning):
    """The embedding cache could not be used; the run continues without it."""


def checksum(dtype: str, shape: str, data: bytes) -> bytes:
    """blake2b-128 over dtype, shape and payload: any torn or flipped byte changes it."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{dtype}|{shape}|".encode("ascii"))
    digest.update(data)
    return digest.digest()


def _encode(vector: np.ndarray) -> tuple[str, str, bytes, bytes, int]:
    """Embeddings are stored as float32; float64 values (a prior's NLLs) keep their bits."""
    dtype = _DTYPES[1] if np.asarray(vector).dtype == np.float64 else _DTYPES[0]
    array = np.ascontiguousarray(vector, dtype=dtype)
    shape = ",".join(str(n) for n in array.shape)
    data = array.tobytes()
    return dtype, shape, data, checksum(dtype, shape, data), len(data)


def _decode(dtype: str, shape: str, data: bytes, digest: bytes) -> np.ndarray | None:
    """The stored vector, or None when anything about the row is off."""
    if dtype not in _DTYPES or not isinstance(data, bytes):
        return None
    if checksum(dtype, shape, data) != digest:
        return None
    try:
        dims = tuple(int(n) for n in shape.split(",")) if shape else ()
    except ValueError:
        return None
    if math.prod(dims) * np.dtype(dtype).itemsize != len(data):
        return None
    vector: np.ndarray = np.frombuffer(data, dtype=dtype).reshape(dims).copy()
    return vector


class NewerSchemaError(sqlite3.DatabaseError):
    """The file is a cache written by a later vlcheck: left alone, never rebuilt."""


class EmbeddingCache:
    """Vectors by (namespace, content key) in ``root/embeddings.sqlite3``; see the module doc.

    ``namespace`` says which model, preprocessing and kind produced a vector (see
    ``content_keys.namespace``); keys are content keys. Thread-safe within a process.
    """

    db_name = DB_NAME  # a subclass keeps its rows in a file of its own (``pixel_cache``)
    label = "embedding cache"
    encode = staticmethod(_encode)  # a row's dtype, shape, payload, checksum and byte count
    decode = staticmethod(_decode)  # the stored value, or None when anything is off

    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.path = Path(root) / self.db_name
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._warned = False
        self._namespace_ids: dict[str, int] = {}
        try:
            Path(root).mkdir(parents=True, exist_ok=True)
            self._db = _when_unlocked(self._open)
        except (sqlite3.OperationalError, NewerSchemaError) as exc:  # locked, read-only, a
            self._disable(exc)  # later vlcheck's: the file is fine, leave it alone
        except sqlite3.DatabaseError as exc:  # garbage or a truncated file: start again
            self._recover(exc)
        except (OSError, sqlite3.Error) as exc:
            self._disable(exc)

    @property
    def enabled(self) -> bool:
        """False once an error has turned the cache off for this run."""
        return self._db is not None

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA wal_autocheckpoint={_WAL_AUTOCHECKPOINT_PAGES}")
            # REPLACE fires the delete trigger (keeping ``totals`` right) only with this on.
            db.execute("PRAGMA recursive_triggers=ON")
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                with _transaction(db):
                    _migrate(db)
            db.execute("SELECT count(*) FROM totals").fetchone()  # a corrupt file fails here
        except BaseException:
            db.close()
            raise
        return db

    def _recover(self, exc: BaseException) -> None:
        """Move a file that is no database (or a damaged one) aside with its WAL files and
        open a new cache, warning once with both names; if that fails too, disable."""
        aside = self.path.with_name(f"{self.db_name}.unusable")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(f"{self.path}{suffix}")
                if source.exists():
                    source.replace(Path(f"{aside}{suffix}"))
            self._db = _when_unlocked(self._open)
        except (OSError, sqlite3.Error) as again:
            self._disable(again)
            return
        self._warned = True
        warnings.warn(
            f"{self.path}: not a usable {self.label} ({exc}); moved it to {aside} and "
            "started a new one (everything not in it is computed again)",
            CacheWarning,
            stacklevel=3,
        )

    def _disable(self, exc: BaseException) -> None:
        if self._db is not None:
            with suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.path}: {self.label} disabled for this run ({exc}); everything is "
                "computed afresh. Delete the file to rebuild the cache.",
                CacheWarning,
                stacklevel=3,
            )

    def _guarded(self, work: Callable[[sqlite3.Connection], T], default: T) -> T:
        """Run ``work`` under the lock; on a database error, disable the cache and give up."""
        with self._lock:
            if self._db is None:
                return default
            try:
                return work(self._db)
            except sqlite3.Error as exc:
                self._disable(exc)
                return default

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``keys``; missing and corrupt entries are left out."""
        return self._guarded(lambda db: self._get(db, namespace, list(dict.fromkeys(keys))), {})

    def _namespace_id(self, db: sqlite3.Connection, name: str, *, create: bool) -> int | None:
        """The integer that stands for namespace ``name`` in ``vectors``; a write makes it.
        Only committed ids are remembered: a rolled-back one may be given to another name."""
        if name in self._namespace_ids:
            return self._namespace_ids[name]
        row = db.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
        if row is not None:
            self._namespace_ids[name] = int(row[0])
            return int(row[0])
        if not create:
            return None
        cursor = db.execute("INSERT INTO namespaces (name) VALUES (?)", (name,))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _get(self, db: sqlite3.Connection, name: str, keys: list[str]) -> dict[str, Any]:
        found: dict[str, np.ndarray] = {}
        namespace = self._namespace_id(db, name, create=False)
        if namespace is None:
            return found
        bad: list[str] = []
        stale: list[str] = []
        now = int(time.time())
        for chunk in _chunks(keys, _SQL_VARS):
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                "SELECT key, dtype, shape, data, checksum, accessed FROM vectors "
                f"WHERE namespace = ? AND key IN ({marks})",
                (namespace, *chunk),
            )
            for key, dtype, shape, data, digest, accessed in rows:
                vector = self.decode(dtype, shape, data, digest)
                if vector is None:
                    bad.append(key)
                    continue
                found[key] = vector
                if now - accessed >= ACCESS_GRANULARITY:
                    stale.append(key)
        if bad or stale:
            with _transaction(db):
                db.executemany(
                    "DELETE FROM vectors WHERE namespace = ? AND key = ?",
                    [(namespace, key) for key in bad],
                )
                db.executemany(
                    "UPDATE vectors SET accessed = ? WHERE namespace = ? AND key = ?",
                    [(now, namespace, key) for key in stale],
                )
        return found

    def put_many(self, namespace: str, items: Mapping[str, np.ndarray]) -> None:
        """Store ``items`` in one transaction, then evict the oldest rows if over the bound."""
        if not items:
            return
        now = int(time.time())
        rows = [(key, *self.encode(vector), now) for key, vector in items.items()]
        self._guarded(lambda db: self._put(db, namespace, rows), None)

    def _put(self, db: sqlite3.Connection, name: str, rows: list[tuple[Any, ...]]) -> None:
        with _transaction(db):
            namespace = self._namespace_id(db, name, create=True)
            db.executemany(
                "INSERT OR REPLACE INTO vectors "
                "(namespace, key, dtype, shape, data, checksum, nbytes, accessed) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ((namespace, *row) for row in rows),
            )
            total = db.execute("SELECT nbytes FROM totals WHERE id = 0").fetchone()[0]
            if total > self.max_bytes:
                _evict(db, total - int(self.max_bytes * EVICT_TO))

    def file_digest(self, path: Path) -> str:
        """sha256 hex of a file's bytes, from the stat index when the file is unchanged."""
        found = self.file_digests([path])[0]
        if isinstance(found, BaseException):
            raise found
        return found.sha256

    def file_digests(
        self, paths: Sequence[Path], mapper: Callable[..., Iterable[Any]] = map
    ) -> list[FileDigest | OSError]:
        """Each file's sha256 and pixel count, or the ``OSError`` reading it raised. The files are
        stat'ed here and looked up in the index with one query; only new or changed files
        are hashed, in chunks of about ``HASH_CHUNK`` bytes through ``mapper`` (a thread
        pool's ``map`` hashes in parallel; one task per small file cost more in thread
        hand-offs than the hashing), and their index rows are written in one transaction."""
        stats = [_stat(path) for path in paths]
        known: dict[str, tuple[Any, ...]] = self._guarded(
            lambda db: _index_rows(db, [s.real for s in stats if isinstance(s, _FileStat)]), {}
        )
        found: list[FileDigest | OSError] = []
        todo: list[tuple[int, _FileStat]] = []  # the files to hash, by position
        for stat in stats:
            row = known.get(stat.real) if isinstance(stat, _FileStat) else None
            if not isinstance(stat, _FileStat):
                found.append(stat)
            elif row is not None and row[:4] == stat.identity:
                found.append(FileDigest(str(row[4]), row[5]))
            else:
                todo.append((len(found), stat))
                found.append(FileDigest("", None))
        chunks = _byte_chunks(todo)
        for chunk, digests in zip(chunks, mapper(_hash_files, chunks), strict=True):
            for (position, _), digest in zip(chunk, digests, strict=True):
                found[position] = digest
        now = time.time()
        fresh = [
            (stat.real, *stat.identity, *digest)
            for position, stat in todo
            if isinstance(digest := found[position], FileDigest)
            and now - stat.identity[1] / 1e9 > RACY_SECONDS
        ]
        if fresh:
            self._guarded(lambda db: _index(db, fresh), None)
        return found

    def get_meta(self, key: str) -> str | None:
        """The JSON text stored under ``key``, or None."""
        row = self._guarded(
            lambda db: db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone(), None
        )
        return None if row is None else str(row[0])

    def put_meta(self, key: str, value: str) -> None:
        """Store (or replace) ``value`` under ``key``."""
        self._guarded(
            lambda db: db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value)), None
        )

    def stored_bytes(self) -> int:
        """Vector bytes held now (what ``max_bytes`` bounds)."""
        return self._guarded(
            lambda db: int(db.execute("SELECT nbytes FROM totals WHERE id = 0").fetchone()[0]), 0
        )

    def close(self) -> None:
        """Close the database; later calls behave as a disabled cache."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FileStat(NamedTuple):
    """A file's resolved path and what the stat index compares."""

    real: str
    identity: tuple[int, int, int, int]  # size, mtime_ns, inode, ctime_ns


def _stat(path: Path) -> _FileStat | OSError:
    """The file's ``_FileStat``, or the error that stopped it (a symlink loop: ELOOP)."""
    try:
        real = os.path.realpath(path)  # os.path: pathlib's resolve() costs 3x as much
        stat = os.stat(real)
    except OSError as exc:
        return exc
    return _FileStat(real, (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns))


def _byte_chunks(files: list[tuple[int, _FileStat]]) -> list[list[tuple[int, _FileStat]]]:
    """Consecutive runs of ``files`` holding about ``HASH_CHUNK`` bytes each."""
    chunks: list[list[tuple[int, _FileStat]]] = []
    size = HASH_CHUNK
    for item in files:
        if size >= HASH_CHUNK:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += item[1].identity[0]
    return chunks


def _hash_files(chunk: list[tuple[int, _FileStat]]) -> list[FileDigest | OSError]:
    """sha256 hex and pixel count of each file of ``chunk``, or the ``OSError`` reading it
    raised."""
    digests: list[FileDigest | OSError] = []
    for _, stat in chunk:
        try:
            path = Path(stat.real)
            digests.append(FileDigest(sha256_file(path), header_pixels(path)))
        except OSError as exc:
            digests.append(exc)
    return digests


def _index_rows(db: sqlite3.Connection, paths: list[str]) -> dict[str, tuple[Any, ...]]:
    """The stat index rows of ``paths``: path -> (size, mtime_ns, inode, ctime_ns, sha256,
    pixels)."""
    rows: dict[str, tuple[Any, ...]] = {}
    for chunk in _chunks(list(dict.fromkeys(paths)), _SQL_VARS):
        marks = ",".join("?" * len(chunk))
        columns = "path, size, mtime_ns, inode, ctime_ns, sha256, pixels"
        for path, *row in db.execute(f"SELECT {columns} FROM files WHERE path IN ({marks})", chunk):
            rows[path] = tuple(row)
    return rows


def _index(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    with _transaction(db):
        db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _migrate(db: sqlite3.Connection) -> None:
    """Create the schema, dropping an older one (a cache is only ever a copy of what can be
    recomputed); a newer one, written by a later vlcheck sharing the folder, is left alone
    and turns this run's cache off."""
    version = db.execute("PRAGMA user_version").fetchone()[0]  # again, under the write lock
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"cache schema {version} is newer than this vlcheck's ({SCHEMA_VERSION})"
        )
    if version != SCHEMA_VERSION:
        for table in _TABLES:
            db.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in _SCHEMA:
        db.execute(statement)


def _when_unlocked(open_cache: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
    """``open_cache()``, tried again for up to ``BUSY_TIMEOUT_S`` while another process holds
    the lock that switching a new file to WAL or creating its tables takes: SQLite's busy
    timeout does not cover those, and ranks or xdist workers opening a fresh cache at once
    disabled it in all but one (3 of 30 processes, started three at a time)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            return open_cache()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.5)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so two
    writers never deadlock upgrading read locks; any error rolls the whole batch back."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _evict(db: sqlite3.Connection, excess: int) -> None:
    """Delete least recently accessed rows until at least ``excess`` bytes are gone."""
    doomed: list[tuple[int]] = []
    freed = 0
    for rowid, nbytes in db.execute("SELECT rowid, nbytes FROM vectors ORDER BY accessed"):
        if freed >= excess:
            break
        doomed.append((rowid,))
        freed += nbytes
    db.executemany("DELETE FROM vectors WHERE rowid = ?", doomed)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
