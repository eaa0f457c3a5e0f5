"""URL images: downloaded once, checked, cached; tested against a local HTTP server."""

from __future__ import annotations

import hashlib
import io
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

from pytest_vlcheck.images.refs import ImageUnavailable as RefsImageUnavailable
from pytest_vlcheck.images.url_cache import ImageUnavailable, cache_path, fetch


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _png()
PNG_SHA = hashlib.sha256(PNG).hexdigest()
BIG = 4096  # the size cap used by the tests


class _Handler(BaseHTTPRequestHandler):
    hits: list[str]
    release: threading.Event  # set at the fixture's end: /slow.png answers then, or in 30 s

    def do_GET(self) -> None:
        self.hits.append(self.path)
        route = {
            "/ok.png": (200, "image/png", PNG),
            "/page": (200, "text/html; charset=utf-8", b"<html>no</html>"),
            "/untyped": (200, None, PNG),
            "/garbage.png": (200, "image/png", b"\x89PNG but not really" * 10),
            "/big-declared.png": (200, "image/png", PNG + b"\0" * BIG),
        }.get(self.path)
        if self.path == "/slow.png":
            self.release.wait(30)
            route = (200, "image/png", PNG)
        if self.path == "/big-streamed.png":
            self._stream_big()
            return
        if route is None:
            self.send_error(404)
            return
        status, kind, body = route
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream_big(self) -> None:
        """No Content-Length: the cap must cut the body off while reading."""
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        try:
            for _ in range(64):
                self.wfile.write(b"\0" * 1024)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    """The client hangs up early on purpose (size cap, timeout): no tracebacks for that."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str], ThreadingHTTPServer]]:
    hits: list[str] = []
    release = threading.Event()
    handler = type(
        "Handler", (_Handler,), {"hits": hits, "release": release, "protocol_version": "HTTP/1.0"}
    )
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", hits, httpd
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


def _reason(url: str, cache: Path, **kwargs: object) -> str:
    with pytest.raises(ImageUnavailable) as info:
        fetch(url, cache, **kwargs)  # type: ignore[arg-type]
    return info.value.reason


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_download_then_cache_hit_without_the_server(server, tmp_path: Path) -> None:
    base, hits, httpd = server
    url = base + "/ok.png"
    path = fetch(url, tmp_path / "cache")
    assert path == cache_path(url, tmp_path / "cache")
    assert path.read_bytes() == PNG and hits == ["/ok.png"]
    httpd.shutdown()
    httpd.server_close()
    assert fetch(url, tmp_path / "cache") == path  # no network: the server is gone
    assert hits == ["/ok.png"]
    assert _leftovers(tmp_path / "cache") == [path.name]


def test_checksum_verified_and_part_of_the_name(server, tmp_path: Path) -> None:
    base, _, _ = server
    cache = tmp_path / "cache"
    path = fetch(base + "/ok.png", cache, sha256=PNG_SHA.upper())
    assert path.name.endswith("-" + PNG_SHA) and path.read_bytes() == PNG
    reason = _reason(base + "/ok.png", tmp_path / "other", sha256="0" * 64)
    assert reason.startswith("sha256 mismatch")
    assert _leftovers(tmp_path / "other") == []


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        ("/missing.png", "HTTP 404"),
        ("/page", "not an image (text/html; charset=utf-8)"),
        ("/untyped", "not an image (no content type)"),
        ("/big-declared.png", "larger than 4 KiB"),
        ("/big-streamed.png", "larger than 4 KiB"),
    ],
)
def test_refusals(server, tmp_path: Path, route: str, expected: str) -> None:
    base, _, _ = server
    assert _reason(base + route, tmp_path / "cache", max_bytes=BIG) == expected
    assert _leftovers(tmp_path / "cache") == []


def test_undecodable_bytes_are_refused(server, tmp_path: Path) -> None:
    base, _, _ = server
    assert _reason(base + "/garbage.png", tmp_path / "cache").startswith("not a decodable image")
    assert _leftovers(tmp_path / "cache") == []


def test_timeout(server, tmp_path: Path) -> None:
    base, _, _ = server
    started = time.monotonic()
    assert _reason(base + "/slow.png", tmp_path / "cache", timeout=0.2) == "timeout after 0.2s"
    # the server answers in 30 s: a client without the timeout waits that long; 10 s bounds
    # only a hang, however loaded the machine
    assert 0.19 <= time.monotonic() - started < 10
    assert _leftovers(tmp_path / "cache") == []


def test_unreachable_host_and_bad_scheme(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _reason(f"http://127.0.0.1:{port}/x.png", tmp_path, timeout=2).startswith(
        "cannot connect"
    )
    assert _reason("file:///etc/passwd", tmp_path).startswith("unsupported URL")


def test_concurrent_fetches_of_one_url_agree(server, tmp_path: Path) -> None:
    base, _, _ = server
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(fetch(base + "/ok.png", tmp_path)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and results[0].read_bytes() == PNG
    assert _leftovers(tmp_path) == [results[0].name]


def test_the_error_is_the_loaders_image_unavailable() -> None:
    assert ImageUnavailable is RefsImageUnavailable
