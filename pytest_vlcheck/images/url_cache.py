"""Images given by URL: downloaded once into a cache folder, checked, then read from there.

A download is refused unless the server answers 200 with an ``image/*`` content type, the
body stays under a size cap (checked while streaming, so a huge body is cut off early),
Pillow can decode it, and its SHA-256 equals the expected one when a checksum is given.
The file is written under a temporary name in the cache folder and renamed into place, so
two processes (xdist workers) fetching the same URL both end with the same complete file
and a reader never sees half of one. A second call for a cached URL touches no network.
"""

from __future__ import annotations

import hashlib
import http.client
import time
import urllib.error
import urllib.request
from pathlib import Path

from pytest_vlcheck.atomic import atomic_path
from pytest_vlcheck.images.refs import ImageUnavailable

__all__ = ["ImageUnavailable", "cache_path", "fetch"]

_CHUNK = 1 << 16
_USER_AGENT = "pytest-vlcheck (image checklist runner)"


def cache_path(url: str, cache_dir: Path, sha256: str | None = None) -> Path:
    """Where ``url`` is cached: named by the SHA-256 of the URL, plus the expected checksum
    (so a changed checksum in the checklist means a fresh download, not a stale file)."""
    name = hashlib.sha256(url.encode("utf-8")).hexdigest()
    if sha256:
        name += "-" + sha256.lower()
    return Path(cache_dir) / name


def fetch(
    url: str,
    cache_dir: Path,
    *,
    sha256: str | None = None,
    timeout: float = 30.0,
    max_bytes: int = 50 * 2**20,
) -> Path:
    """The cached file of ``url``, downloading it first if needed.

    Raises ``ImageUnavailable`` with a short reason ("HTTP 404", "timeout after 30s",
    "not an image (text/html)", "larger than 50 MiB", "sha256 mismatch", ...).
    """
    target = cache_path(url, cache_dir, sha256)
    if target.is_file():
        return target
    if not url.lower().startswith(("http://", "https://")):
        raise ImageUnavailable(f"unsupported URL (expected http or https): {url}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as temp:
        digest = _download(url, temp, timeout, max_bytes)
        if sha256 and digest != sha256.lower():
            raise ImageUnavailable(
                f"sha256 mismatch (expected {sha256.lower()[:12]}..., got {digest[:12]}...)"
            )
        _check_decodes(temp)
    return target


def _download(url: str, temp: Path, timeout: float, max_bytes: int) -> str:
    """Stream the body into ``temp``; return its SHA-256. ``timeout`` bounds every socket
    wait and the whole transfer."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = getattr(response, "status", 200)
            if status != 200:
                raise ImageUnavailable(f"HTTP {status}")
            kind = response.headers.get_content_type() if response.headers else ""
            declared = response.headers.get("Content-Type") if response.headers else None
            if not declared or not kind.startswith("image/"):
                raise ImageUnavailable(f"not an image ({declared or 'no content type'})")
            length = response.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise ImageUnavailable(f"larger than {_size(max_bytes)}")
            digest = hashlib.sha256()
            total = 0
            with temp.open("wb") as out:
                while True:
                    if time.monotonic() > deadline:
                        raise ImageUnavailable(f"timeout after {timeout:g}s")
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > max_bytes:
                        raise ImageUnavailable(f"larger than {_size(max_bytes)}")
                    digest.update(chunk)
                    out.write(chunk)
            if total == 0:
                raise ImageUnavailable("empty response")
            return digest.hexdigest()
    except urllib.error.HTTPError as exc:
        raise ImageUnavailable(f"HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise ImageUnavailable(f"timeout after {timeout:g}s") from None
        raise ImageUnavailable(f"cannot connect ({exc.reason})") from None
    except TimeoutError:
        raise ImageUnavailable(f"timeout after {timeout:g}s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise ImageUnavailable(f"download failed ({exc or type(exc).__name__})") from None


def _check_decodes(path: Path) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.verify()
    except Image.DecompressionBombError:
        pass  # a valid image, only large: open_rgb explains the pixel limit per image
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ImageUnavailable(f"not a decodable image ({exc})") from None


def _size(count: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"
