"""How a served model is reached: ``--vl-concurrency``, ``--vl-request-timeout`` and
``--vl-api-key-env`` (pure data: the plugin's option table imports it)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONCURRENCY = 8
"""Requests in flight at once per served model (``--vl-concurrency``)."""
DEFAULT_REQUEST_TIMEOUT = 120.0
"""Seconds one request may take before the run stops with one line (``--vl-request-timeout``)."""
MAX_CONCURRENCY = 1024
MAX_REQUEST_TIMEOUT = 86400.0


@dataclass(frozen=True)
class ServedOptions:
    """Throughput and credentials of a served model; results do not depend on them, so they
    are no run condition and name no cache namespace."""

    concurrency: int = DEFAULT_CONCURRENCY
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    api_key_env: str | None = None
    """The name of the environment variable holding the API key (never the key itself)."""
