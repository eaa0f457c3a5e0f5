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
from pytest_vlcheck.importers.embedded import (
    ParquetRow,
    image_bytes,
    image_extension,
    image_writer,
    parquet_rows,
)
from pytest_vlcheck.importers.winoground import add_criterion

COLUMNS = ("image", "caption", "negative_image", "negative_caption", "type", "subtype")
IMAGES = ("image", "negative_image")


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
        for index, row in parquet_rows(path, COLUMNS):
            where = f"{path.stem}:{index}"
            names = [f"{folder}/{_name(path, index, row, column)}" for column in IMAGES]
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
    args._vl_extra_writers = [image_writer(files, IMAGES, folder, _name)]
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


def _name(path: Path, index: int, row: ParquetRow, column: str) -> str:
    """``{file stem}-{row}-{column}{.png|.jpg}``."""
    extension = image_extension(path, index, image_bytes(path, index, row, column), column)
    return f"{path.stem}-{index}-{column}{extension}"


IMPORTER = Importer(
    "bivlc",
    "BiVLC's parquet files (group test: I2T, T2I, group; images written beside it)",
    add_criterion,
    convert,
)
