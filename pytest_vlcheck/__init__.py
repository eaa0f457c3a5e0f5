"""pytest-vlcheck: vision-language capability checklists as pytest tests.

The core (``checklist``, ``images``, ``models``, ``engine``, ``metrics``, ``report``, ``run``)
knows nothing of pytest; ``plugin`` wires it into pytest, ``cli`` into the ``vlcheck``
command, and ``evaluate`` (``run.evaluate``) serves Python callers such as training loops.
``evaluate``, ``Run``, ``CapabilityResult`` and the exceptions a caller catches
(``VlcheckUserError`` and its subclasses ``SettingsError``, ``ModelLoadError`` and
``ChecklistError``; ``CollectiveError``, a rank's failure under torch.distributed) are
imported on first use, so importing the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_vlcheck.lazy import lazy_exports

if TYPE_CHECKING:  # the names as mypy sees them (``_EXPORTS`` resolves them at run time)
    from pytest_vlcheck.errors import ModelLoadError as ModelLoadError
    from pytest_vlcheck.errors import SettingsError as SettingsError
    from pytest_vlcheck.errors import VlcheckUserError as VlcheckUserError
    from pytest_vlcheck.parsing.errors import ChecklistError as ChecklistError
    from pytest_vlcheck.results.capability import CapabilityResult as CapabilityResult
    from pytest_vlcheck.run.distributed.collective import CollectiveError as CollectiveError
    from pytest_vlcheck.run.evaluate import evaluate as evaluate
    from pytest_vlcheck.run.outcome import Run as Run

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "pytest_vlcheck.run.evaluate",
    "Run": "pytest_vlcheck.run.outcome",
    "CapabilityResult": "pytest_vlcheck.results.capability",
    "VlcheckUserError": "pytest_vlcheck.errors",
    "SettingsError": "pytest_vlcheck.errors",
    "ModelLoadError": "pytest_vlcheck.errors",
    "ChecklistError": "pytest_vlcheck.parsing.errors",
    "CollectiveError": "pytest_vlcheck.run.distributed.collective",
}

__all__ = [
    "CapabilityResult",
    "ChecklistError",
    "CollectiveError",
    "ModelLoadError",
    "Run",
    "SettingsError",
    "VlcheckUserError",
    "__version__",
    "evaluate",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
