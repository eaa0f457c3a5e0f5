"""Importers: benchmark files (VL-CheckList, SugarCrepe, ARO, ...) -> checklist YAML documents.

``FORMATS`` maps each ``vlcheck import FORMAT`` name to its ``Importer``; the command lives in
``pytest_vlcheck.cli.import_command``.
"""

from __future__ import annotations

from pytest_vlcheck.importers import (
    aro,
    bivlc,
    cola,
    colorswap,
    compun,
    crepe,
    eqben,
    mmvp,
    negbench,
    predicate_noun,
    spec,
    sugarcrepe,
    sugarcrepe_pp,
    svo_probes,
    valse,
    vismin,
    vl_checklist,
    whatsup,
    winoground,
)
from pytest_vlcheck.importers.common import Importer, SourceError

FORMATS: dict[str, Importer] = {
    module.IMPORTER.name: module.IMPORTER
    for module in (
        vl_checklist,
        sugarcrepe,
        sugarcrepe_pp,
        predicate_noun,
        compun,
        svo_probes,
        aro,
        winoground,
        valse,
        negbench,
        crepe,
        colorswap,
        eqben,
        vismin,
        whatsup,
        mmvp,
        cola,
        spec,
        bivlc,
    )
}

__all__ = ["FORMATS", "Importer", "SourceError"]
