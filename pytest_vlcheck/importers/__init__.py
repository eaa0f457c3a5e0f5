"""Importers: benchmark files (VL-CheckList, SugarCrepe, ARO, ...) -> checklist YAML documents.

``FORMATS`` maps each ``vlcheck import FORMAT`` name to its ``Importer``: the built-in
formats, then those installed packages register in the ``pytest_vlcheck.importers``
entry-point group (docs/extending.md). The command lives in ``pytest_vlcheck.cli.import_command``.
"""

from __future__ import annotations

from typing import Any

from pytest_vlcheck.importers.common import Importer, SourceError
from pytest_vlcheck.registry import Registry, check_named

ENTRY_POINT_GROUP = "pytest_vlcheck.importers"


def check_importer(value: Any, name: str, where: str) -> Importer:
    """``value`` if it is the ``Importer`` of format ``name``; else a ``PluginError``."""
    return check_named(value, name, where, Importer, "pytest_vlcheck.importers.Importer")


FORMATS: Registry[Importer] = Registry(
    "import format",
    {
        name: f"pytest_vlcheck.importers.{module}:IMPORTER"
        for name, module in (
            ("vl-checklist", "vl_checklist"),
            ("sugarcrepe", "sugarcrepe"),
            ("sugarcrepe-pp", "sugarcrepe_pp"),
            ("predicate-noun", "predicate_noun"),
            ("compun", "compun"),
            ("svo-probes", "svo_probes"),
            ("aro", "aro"),
            ("winoground", "winoground"),
            ("valse", "valse"),
            ("negbench", "negbench"),
            ("crepe", "crepe"),
            ("colorswap", "colorswap"),
            ("eqben", "eqben"),
            ("vismin", "vismin"),
            ("whatsup", "whatsup"),
            ("mmvp", "mmvp"),
            ("cola", "cola"),
            ("spec", "spec"),
            ("bivlc", "bivlc"),
            ("pope", "pope"),
            ("naturalbench", "naturalbench"),
        )
    },
    ENTRY_POINT_GROUP,
    check_importer,
)

__all__ = ["FORMATS", "Importer", "SourceError"]
