"""Parquet releases with embedded images (BiVLC, NaturalBench): their rows, read a batch at a
time, and the images' bytes, written beside the checklist once it loads.

Reading parquet needs ``pyarrow`` (the ``parquet`` extra), imported when a file is read. An
image cell is what ``datasets`` writes for an Image column, ``{bytes, path}``; only PNG and
JPEG bytes are taken.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_vlcheck.importers.common import SourceError

_BATCH = 64

ParquetRow = dict[str, Any]
"""One row of a parquet file as pyarrow reads it: column name -> cell."""


def parquet_rows(
    path: Path, required: Sequence[str], optional: Sequence[str] = ()
) -> Iterator[tuple[int, ParquetRow]]:
    """The file's rows (index from 0) holding the ``required`` columns, which the file must
    have, and those of the ``optional`` ones it has."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SourceError(
            path, "reading parquet needs pyarrow: pip install 'pytest-vlcheck[parquet]'"
        ) from None
    try:
        reader = pq.ParquetFile(path)
        missing = [c for c in required if c not in reader.schema_arrow.names]
        if missing:
            raise SourceError(path, f"no column {missing[0]!r}; expected {', '.join(required)}")
        index = 0
        wanted = [*required, *(c for c in optional if c in reader.schema_arrow.names)]
        for batch in reader.iter_batches(batch_size=_BATCH, columns=wanted):
            for row in batch.to_pylist():
                yield index, row
                index += 1
    except (OSError, ValueError) as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(path, f"not a readable parquet file ({exc})") from None


def image_bytes(path: Path, index: int, row: ParquetRow, column: str) -> bytes:
    """An embedded image's bytes (``{bytes, path}``, as ``datasets`` writes an Image column)."""
    cell = row.get(column)
    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not isinstance(data, bytes) or not data:
        raise SourceError(path, f"'{column}' holds no embedded image bytes", record=index)
    return data


def image_extension(path: Path, index: int, data: bytes, column: str) -> str:
    """``.png`` or ``.jpg`` from the image's first bytes; anything else is an error."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    if data.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    raise SourceError(path, f"'{column}' is neither a PNG nor a JPEG image", record=index)


def content_name(path: Path, index: int, row: ParquetRow, column: str) -> str:
    """An embedded image's file name from its content: the first 16 hex digits of its
    SHA-256 and its extension, so an image two rows share is one file."""
    data = image_bytes(path, index, row, column)
    return hashlib.sha256(data).hexdigest()[:16] + image_extension(path, index, data, column)


def image_writer(
    files: Iterable[Path],
    columns: Sequence[str],
    folder: str,
    name: Callable[[Path, int, ParquetRow, str], str],
) -> Callable[[Path], None]:
    """Writes the images of every row's ``columns`` under ``folder`` of the checklist's
    directory as ``name`` calls them, reading the files again (the images are not held in
    memory); a file already there with the same bytes is left alone."""
    from pytest_vlcheck.atomic import atomic_write_bytes

    sources = list(files)

    def write(directory: Path) -> None:
        target = directory / folder
        target.mkdir(parents=True, exist_ok=True)
        for path in sources:
            for index, row in parquet_rows(path, columns):
                for column in columns:
                    data = image_bytes(path, index, row, column)
                    image = target / name(path, index, row, column)
                    if not (image.is_file() and image.read_bytes() == data):
                        atomic_write_bytes(image, data)

    return write
