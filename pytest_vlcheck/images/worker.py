"""An image worker process: the tool's own image work (decoding a file, fetching a URL,
rendering a scene, cropping, perturbing) for a parent run that keeps an accelerator busy.

Rendering a scene is Python, so loader threads share one core through the GIL; processes
do not. ``images.pool`` starts each worker as ``python -c`` calling ``main`` with
a JSON config: a fresh interpreter, never a fork of a process that holds CUDA and torch's
threads, and never a second import of the caller's main script (which multiprocessing's
spawn and forkserver do, running an unguarded training script again).
The model's preprocessing and any user code stay in the parent's threads.

The protocol, one request at a time: the parent writes an ``ImageRef`` as one JSON line; the
worker answers with one JSON line (``mode``, ``size``, ``bytes``; or ``unavailable`` with the
loader's reason; or ``error``) followed by ``bytes`` raw pixel bytes. JSON and raw bytes
only: nothing is unpickled. The worker ends at the end of its input (the parent closed it
or exited) and leaves Ctrl-C to the parent: it runs in a session of its own, out of the
terminal's reach, and ignores SIGINT sent to it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, BinaryIO

from pytest_vlcheck.images.loading import ImageLoader
from pytest_vlcheck.images.perturb import ImagePerturbation
from pytest_vlcheck.images.refs import ImageRef, ImageUnavailable


def ref_to_json(ref: ImageRef) -> bytes:
    """One request line."""
    perturb = ref.perturb
    fields = {
        "kind": ref.kind,
        "written": ref.written,
        "location": ref.location,
        "crop": ref.crop,
        "crop_relative": ref.crop_relative,
        "sha256": ref.sha256,
        "perturb": None if perturb is None else [perturb.kind, perturb.amount, perturb.seed],
    }
    return json.dumps(fields).encode("utf-8") + b"\n"


def ref_from_json(line: bytes) -> ImageRef:
    fields: dict[str, Any] = json.loads(line)
    crop, perturb = fields.pop("crop"), fields.pop("perturb")
    return ImageRef(
        **fields,
        crop=None if crop is None else tuple(crop),
        perturb=None if perturb is None else ImagePerturbation(*perturb),
    )


def answer(loader: ImageLoader, ref: ImageRef) -> tuple[dict[str, Any], bytes]:
    """The response header and pixel bytes for ``ref``."""
    try:
        image = loader(ref)
    except ImageUnavailable as exc:
        return {"unavailable": exc.reason}, b""
    except Exception as exc:  # a defect: the parent raises it with this text
        return {"error": f"{type(exc).__name__}: {exc}"}, b""
    data = image.tobytes()
    return {"mode": image.mode, "size": list(image.size), "bytes": len(data)}, data


def serve(config: dict[str, Any], requests: BinaryIO, responses: BinaryIO) -> None:
    """Answer ``requests`` until they end."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = config["max_image_pixels"]  # the parent's limit, process-wide
    cache = config["url_cache_dir"]
    loader = ImageLoader(None if cache is None else Path(cache))
    for line in requests:
        header, data = answer(loader, ref_from_json(line))
        responses.write(json.dumps(header).encode("utf-8") + b"\n")
        responses.write(data)
        responses.flush()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    responses = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, not into the pixel stream
    serve(json.loads(sys.argv[1]), sys.stdin.buffer, responses)
