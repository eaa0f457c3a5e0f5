"""BiVLC (Miranda et al. 2024): the Hugging Face dataset ``imirandam/BiVLC``, test split
(2,933 rows), as parquet: ``image``, ``caption``, ``negative_image``, ``negative_caption``,
``type`` and ``subtype``, the images embedded as ``{bytes, path}``.

One ``group`` test (image i with caption i: the row's image and caption, then its negative
image and negative caption). The authors' metric (``src/CLIP_fine_tuning/CLIP_utils.py``,
``evaluate_BiVLC``; ``main_evaluation_BiVLC.py`` prints it overall and per type) is strict:
I2T needs each image to prefer its own caption (Winoground's text score), T2I each caption
its own image (the image score), the group score both; all three are in the result's
metrics, and ``type`` and ``subtype`` are slices. Reading parquet needs ``pyarrow`` (the
``parquet`` extra). The embedded images are written once, after the checklist is checked,
to ``OUT_images/`` beside the checklist, named by row and column, and referenced relatively;
an image already there with the same bytes is left as it is.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path

from pytest_vlcheck.importers.common import (
    Importer,
    Output,
    SourceError,
    checklist,
    files_under,
    make_test,
    text_field,
)
from pytest_vlcheck.importers.winoground import add_criterion

COLUMNS = ("image", "caption", "negative_image", "negative_caption", "type", "subtype")
IMAGES = ("image", "negative_image")
_BATCH = 64


def convert(sources: list[Path], args: argparse.Namespace) -> list[Output]:
    """One group test over every row of the parquet files, in file order; the images are
    written by the import command once the checklist loads (``_vl_extra_writers``)."""
    if getattr(args, "image_root", None):
        raise SourceError(sources[0], "--image-root does not apply: BiVLC's images are "
                          "written beside the checklist")  # fmt: skip
    files = files_under(sources, (".parquet",))
    folder = f"{args.output.stem}_images"
    examples = []
    for path in files:
        for index, row in _rows(path):
            where = f"{path.stem}:{index}"
            names = [f"{folder}/{path.stem}-{index}-{column}{_extension(path, index, row, column)}"
                     for column in IMAGES]  # fmt: skip
            examples.append(
                {
                    "id": where,
                    "images": names,
                    "captions": [
                        text_field(path, row, key, index) for key in ("caption", "negative_caption")
                    ],
                    "tags": {key: text_field(path, row, key, index) for key in ("type", "subtype")},
                }
            )
    if not examples:
        raise SourceError(sources[0], "no rows in the parquet files")
    args._vl_extra_writers = [_image_writer(files, folder)]
    test = make_test(
        "bivlc",
        "scene/bidirectional_negatives",
        "group",
        examples,
        threshold=args.threshold,
        settings={"criterion": args.criterion},
        description="BiVLC: the image and its negative, each with its caption; I2T (text "
        f"score), T2I (image score) and group (passes on the {args.criterion} score)",
    )
    return [
        (
            None,
            checklist(
                "BiVLC (Miranda et al. 2024): SugarCrepe's negative captions with a generated "
                "image for each, matched both ways.",
                [test],
            ),
        )
    ]


def _rows(path: Path, columns: tuple[str, ...] = COLUMNS) -> Iterator[tuple[int, dict]]:
    """The file's rows (index from 0) with ``columns``, a batch at a time."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SourceError(
            path, "reading parquet needs pyarrow: pip install 'pytest-vlcheck[parquet]'"
        ) from None
    try:
        reader = pq.ParquetFile(path)
        missing = [c for c in COLUMNS if c not in reader.schema_arrow.names]
        if missing:
            raise SourceError(path, f"no column {missing[0]!r}; expected {', '.join(COLUMNS)}")
        index = 0
        for batch in reader.iter_batches(batch_size=_BATCH, columns=list(columns)):
            for row in batch.to_pylist():
                yield index, row
                index += 1
    except (OSError, ValueError) as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(path, f"not a readable parquet file ({exc})") from None


def _image_bytes(path: Path, index: int, row: dict, column: str) -> bytes:
    """An embedded image's bytes (``{bytes, path}``, as ``datasets`` writes an Image column)."""
    cell = row.get(column)
    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not isinstance(data, bytes) or not data:
        raise SourceError(path, f"'{column}' holds no embedded image bytes", record=index)
    return data


def _extension(path: Path, index: int, row: dict, column: str) -> str:
    """``.png`` or ``.jpg`` from the image's first bytes; anything else is an error."""
    data = _image_bytes(path, index, row, column)
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    if data.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    raise SourceError(path, f"'{column}' is neither a PNG nor a JPEG image", record=index)


def _image_writer(files: list[Path], folder: str) -> Callable[[Path], None]:
    """Writes every row's images under ``folder`` of the checklist's directory, reading the
    files again (the images are not held in memory); an identical file is left alone."""
    from pytest_vlcheck.atomic import atomic_write_bytes

    def write(directory: Path) -> None:
        target = directory / folder
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            for index, row in _rows(path, IMAGES):
                for column in IMAGES:
                    data = _image_bytes(path, index, row, column)
                    name = f"{path.stem}-{index}-{column}{_extension(path, index, row, column)}"
                    image = target / name
                    if not (image.is_file() and image.read_bytes() == data):
                        atomic_write_bytes(image, data)

    return write


IMPORTER = Importer(
    "bivlc",
    "BiVLC's parquet files (group test: I2T, T2I, group; images written beside it)",
    add_criterion,
    convert,
)
