"""HTTP to a served model, standard library only: JSON requests spread over the replicas,
``--vl-concurrency`` of them in flight, answers in the order asked.

A 429, a 5xx or a connection reset is retried with exponential backoff (a ``Retry-After``
header is honoured, up to ``MAX_WAIT`` seconds) on the next replica; a refused connection,
an unknown host, a timeout, a 401/403 or any other refusal is one ``ServedError`` line naming
the server and, for a timeout, the seconds waited. The API key travels in the
``Authorization`` header only: it is never part of a message, a fingerprint or a cache key.
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from pytest_vlcheck.errors import ModelLoadError
from pytest_vlcheck.models.backends.served.endpoint import Endpoint, Replica, hide_credentials
from pytest_vlcheck.models.backends.served.options import ServedOptions

RETRIES = 4
"""Tries after the first, for an answer worth retrying (``RETRY_STATUSES``, a reset)."""
BACKOFF = 0.25
"""Seconds before the first retry; doubled at each next one."""
MAX_WAIT = 10.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RESETS = (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)
_UNREACHABLE = (ConnectionRefusedError, socket.gaierror)


class ServedError(ModelLoadError):
    """A served model's server cannot be used: one line naming it."""


class RequestRefused(ServedError):
    """The server answered a request with a 4xx other than 401/403/429: ``detail`` is its
    error text (what ``chat`` reads to name the field it refused)."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class Client:
    """JSON over HTTP to the replicas of one endpoint."""

    def __init__(self, endpoint: Endpoint, options: ServedOptions, api_key: str | None) -> None:
        self.endpoint = endpoint
        self.options = options
        self._api_key = api_key
        self._turn = itertools.count()
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"Client({self.endpoint.shown})"

    def get(self, path: str, replica: Replica) -> Any:
        """``GET base + path`` on one replica (the model list at load time)."""
        return self._send("GET", path, None, [replica])

    def post(self, path: str, payload: dict[str, Any]) -> Any:
        """``POST base + path`` on the next replica (the others on a retry)."""
        replicas = self.endpoint.replicas
        start = next(self._turn) % len(replicas)
        order = [replicas[(start + k) % len(replicas)] for k in range(len(replicas))]
        return self._send("POST", path, json.dumps(payload).encode("utf-8"), order)

    def post_all(self, path: str, payloads: Sequence[dict[str, Any]]) -> list[Any]:
        """Every payload posted, ``--vl-concurrency`` at a time; answers in payload order."""
        if self.options.concurrency <= 1 or len(payloads) <= 1:
            return [self.post(path, payload) for payload in payloads]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.options.concurrency, thread_name_prefix="vlcheck-served"
                )
        return list(self._pool.map(lambda payload: self.post(path, payload), payloads))

    def _send(self, method: str, path: str, body: bytes | None, order: list[Replica]) -> Any:
        problem = ""
        for attempt in range(RETRIES + 1):
            replica = order[attempt % len(order)]
            try:
                status, retry_after, data = self._exchange(replica, method, path, body)
            except TimeoutError:
                raise ServedError(
                    f"server {replica.base} did not answer {method} {path} within "
                    f"{self.options.request_timeout:g} s; expected an answer in time (a "
                    "running server, or a longer --vl-request-timeout)"
                ) from None
            except _UNREACHABLE as exc:
                problem = _reason(exc)
                if len(order) == 1 or attempt == RETRIES:
                    raise ServedError(
                        f"cannot reach server {replica.base} ({problem}); expected an "
                        "OpenAI-compatible server running at that address"
                    ) from None
                continue
            except (*_RESETS, http.client.IncompleteRead) as exc:
                problem, retry_after = _reason(exc), None
            else:
                if status < 400:
                    return _json(data, replica, method, path)
                problem = f"HTTP {status}"
                if status not in RETRY_STATUSES:
                    raise _refusal(replica, method, path, status, data)
            if attempt < RETRIES:
                time.sleep(min(MAX_WAIT, retry_after or BACKOFF * 2**attempt))
        raise ServedError(
            f"server {order[0].base} kept failing {method} {path} ({problem}) after "
            f"{RETRIES + 1} tries; expected a server that answers"
        )

    def _exchange(
        self, replica: Replica, method: str, path: str, body: bytes | None
    ) -> tuple[int, float | None, bytes]:
        connection = self._connection(replica)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        target = urlsplit(replica.base).path + path
        try:
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except BaseException:
            self._drop(replica)
            raise
        if response.getheader("Connection", "").lower() == "close":
            self._drop(replica)
        return response.status, _seconds(response.getheader("Retry-After")), data

    def _connection(self, replica: Replica) -> http.client.HTTPConnection:
        """This thread's kept-alive connection to ``replica``."""
        connections: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault(
            "connections", {}
        )
        found = connections.get(replica.base)
        if found is None:
            parts = urlsplit(replica.base)
            kind = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            found = kind(parts.netloc, timeout=self.options.request_timeout)
            connections[replica.base] = found
        return found

    def _drop(self, replica: Replica) -> None:
        connection = self._local.__dict__.get("connections", {}).pop(replica.base, None)
        if connection is not None:
            connection.close()


def _json(data: bytes, replica: Replica, method: str, path: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ServedError(
            f"server {replica.base} answered {method} {path} with no JSON ({_excerpt(data)}); "
            "expected an OpenAI-compatible server"
        ) from None


def _refusal(replica: Replica, method: str, path: str, status: int, data: bytes) -> ServedError:
    detail = _excerpt(data)
    if status in (401, 403):
        return ServedError(
            f"server {replica.base} refused {method} {path} (HTTP {status}: {detail}); "
            "expected the API key it accepts in the environment variable named by "
            "--vl-api-key-env"
        )
    return RequestRefused(
        f"server {replica.base} refused {method} {path} (HTTP {status}: {detail})", status, detail
    )


def _excerpt(data: bytes, limit: int = 200) -> str:
    """The server's error text, on one line: its JSON ``message`` when it has one."""
    text = data.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
        found = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
        if isinstance(found, dict):  # OpenAI's {"error": {"message"}}, FastAPI's {"detail"}
            found = found.get("message", found.get("detail", found))
        text = str(found)
    except ValueError:
        pass
    text = hide_credentials(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(exc: BaseException) -> str:
    name = type(exc).__name__
    return f"{name}: {exc}" if str(exc) else name


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
