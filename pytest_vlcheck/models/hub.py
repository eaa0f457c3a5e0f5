"""The Hugging Face Hub as the backends see it: whether it answers (probed once), its
cache folder, and loading from that cache alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_vlcheck.models.batching import short_detail

HUB_PROBE_TIMEOUT = 2.0
"""Seconds to wait for the Hugging Face Hub before treating it as unreachable: one probe
instead of the hub client's retries (which took ~50 s to give up offline)."""


class HubProbe:
    """Whether each Hugging Face endpoint answered, asked once.

    Lifetime: the process (``HUB_PROBE``): every model spec of every session in it asks, and
    waiting up to ``HUB_PROBE_TIMEOUT`` seconds each time would add up."""

    def __init__(self) -> None:
        self._answers: dict[str, str | None] = {}

    def reason(self, endpoint: str, timeout: float) -> str | None:
        """Why ``endpoint`` cannot be reached (None: it answered), probed on first ask."""
        if endpoint not in self._answers:
            self._answers[endpoint] = _probe(endpoint, timeout)
        return self._answers[endpoint]


HUB_PROBE = HubProbe()
"""The process's hub probe (made at import)."""


def hub_unreachable_reason(timeout: float = HUB_PROBE_TIMEOUT) -> str | None:
    """Why the Hugging Face Hub cannot be used now (offline mode set, or no answer within
    ``timeout`` seconds), or None when it answers. Probed once per process."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return "huggingface_hub is not installed"
    if getattr(constants, "HF_HUB_OFFLINE", False):
        return "HF_HUB_OFFLINE is set"
    endpoint = str(getattr(constants, "ENDPOINT", "https://huggingface.co"))
    return HUB_PROBE.reason(endpoint, timeout)


def _probe(url: str, timeout: float) -> str | None:
    """One HEAD request in a daemon thread, so a hanging DNS lookup cannot stall us."""
    import threading
    import urllib.error
    import urllib.request

    outcome: list[str | None] = []

    def ask() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout)
            outcome.append(None)
        except urllib.error.HTTPError:
            outcome.append(None)  # it answered: reachable, whatever the status
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            outcome.append(f"{url} cannot be reached ({short_detail(reason, 120)})")

    thread = threading.Thread(target=ask, daemon=True, name="vlcheck-hub-probe")
    thread.start()
    thread.join(timeout + 0.5)
    return outcome[0] if outcome else f"{url} did not answer within {timeout:g} s"


def hub_cache_dir() -> str:
    """Where the Hugging Face Hub keeps downloads (``HF_HUB_CACHE`` / ``HF_HOME``)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return "~/.cache/huggingface/hub"
    return str(constants.HF_HUB_CACHE)


@contextmanager
def hub_offline() -> Iterator[None]:
    """Run a load with the hub client in offline mode: cached files only, no network calls."""
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before
