"""How many cores this process may use: its affinity (a cpuset's share of the machine; a
CPU quota is not seen), shared among pytest-xdist's workers and torchrun's ranks on the
machine."""

from __future__ import annotations

import os
from collections.abc import Mapping


def usable_cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def processes_sharing(name: str, environ: Mapping[str, str] | None = None) -> int:
    """The count an environment variable gives (``PYTEST_XDIST_WORKER_COUNT``,
    torchrun's ``LOCAL_WORLD_SIZE``); 1 when unset or not a count."""
    value = (os.environ if environ is None else environ).get(name, "1")
    return max(1, int(value)) if value.isdigit() else 1


def rank_share(count: int, environ: Mapping[str, str] | None = None) -> int:
    """This process's share of ``count`` (cores, loader threads) among torchrun's ranks on
    this machine (``LOCAL_WORLD_SIZE``); never none. xdist workers each take all of it."""
    return max(1, count // processes_sharing("LOCAL_WORLD_SIZE", environ))


def machine_share(cores: int, environ: Mapping[str, str] | None = None) -> int:
    """This process's share of ``cores``, divided among xdist's workers and torchrun's
    ranks on this machine; never none."""
    sharing = processes_sharing("PYTEST_XDIST_WORKER_COUNT", environ)
    sharing *= processes_sharing("LOCAL_WORLD_SIZE", environ)
    return max(1, cores // sharing)
