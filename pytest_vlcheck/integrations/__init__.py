"""Training-framework hooks: thin callbacks over ``pytest_vlcheck.evaluate``.

``VlcheckCallback`` is a transformers ``TrainerCallback``; ``VlcheckLightningCallback`` a
Lightning ``Callback``. Each is imported on first use, so importing this package needs
neither framework.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "VlcheckCallback": "pytest_vlcheck.integrations.hf_trainer",
    "VlcheckLightningCallback": "pytest_vlcheck.integrations.lightning_callback",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_vlcheck.integrations' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
