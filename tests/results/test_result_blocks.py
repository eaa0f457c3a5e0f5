"""results.blocks: the gate, prior and reference blocks of a result row are typed, and every
shape earlier versions wrote reads back and writes out byte-for-byte the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_vlcheck.report.loader import read_matrix
from pytest_vlcheck.report.matrix import matrix_document, matrix_json
from pytest_vlcheck.results import CapabilityResult, ResultFormatError
from pytest_vlcheck.results.blocks import (
    GateComparison,
    GateWarning,
    PriorBlock,
    PriorNotApplicable,
    ReferenceDelta,
)
from pytest_vlcheck.results.run_meta import ModelMeta

# The blocks exactly as the previous version wrote them (dicts built by hand, keys in its order).
GATE_COMPARISON = {
    "delta_pts": -12.5,
    "baseline_rate": 0.8,
    "current_rate": 0.675,
    "n_matched": 40,
    "b": 6,
    "c": 1,
    "p_mid": 0.0390625,
    "p_corrected": 0.078125,
    "alpha_corrected": 0.025,
    "regressed": False,
    "improved": False,
    "added": 2,
    "removed": 0,
    "min_detectable_drop_pts": 15.0,
    "warnings": ["run conditions differ from the baseline: device cpu -> cuda"],
    "baseline_model": "base",
    "test": "mcnemar_midp",
}
GATE_TOO_SMALL = GATE_COMPARISON | {
    "min_detectable_drop_pts": None,
    "warnings": [],
    "regressed": True,
    "p_mid": 1,
}
GATE_WARNING = {"warning": "no baseline entry for this test"}
PRIOR_APPLICABLE = {
    "applicable": True,
    "priors": ["gpt2", "py:lm:make"],
    "n": 4,
    "accuracy": 0.5,
    "prior_accuracy": 0.5,
    "n_hard": 2,
    "hard_passed": 1,
    "hard_accuracy": 0.5,
    "hard_ci_low": 0.0945,
    "hard_ci_high": 0.9055,
    "linguistic_gap": 0.0,
    "hard_threshold": 0.5,
    "hard_threshold_met": True,
    "grid": {
        "true_edges": [2.0, 4.0, 6.0],
        "negative_edges": [4.0, 4.5, 5.0],
        "n": [[1, 1], [1, 1]],
        "passed": [[1, 0], [0, 1]],
        "unbinned": 0,
    },
}
PRIOR_NO_HARD = PRIOR_APPLICABLE | {
    "n_hard": 0,
    "hard_passed": 0,
    "hard_accuracy": None,
    "hard_ci_low": None,
    "hard_ci_high": None,
    "linguistic_gap": None,
    "hard_threshold": None,
    "hard_threshold_met": None,
    "grid": {},
}
PRIOR_NOT_APPLICABLE = {
    "applicable": False,
    "priors": ["gpt2"],
    "reason": "not applicable: an image test gives the prior no choice between captions",
}
PRIOR_NO_PRIOR = {
    "applicable": False,
    "priors": [],
    "reason": "hard_threshold not applied: no --vl-prior",
    "hard_threshold": 0.6,
}
REFERENCE = {
    "model": "first",
    "delta_pts": -2.0,
    "p_value": 0.5,
    "p_holm": 1.0,
    "n_paired": 12,
    "discordant": [3, 1],
}
REFERENCE_UNPAIRED = REFERENCE | {
    "p_value": None,
    "p_holm": None,
    "n_paired": 0,
    "discordant": [0, 0],
}

SHAPES = [
    ("gate", GATE_COMPARISON, GateComparison),
    ("gate", GATE_TOO_SMALL, GateComparison),
    ("gate", GATE_WARNING, GateWarning),
    ("prior", PRIOR_APPLICABLE, PriorBlock),
    ("prior", PRIOR_NO_HARD, PriorBlock),
    ("prior", PRIOR_NOT_APPLICABLE, PriorNotApplicable),
    ("prior", PRIOR_NO_PRIOR, PriorNotApplicable),
    ("reference", REFERENCE, ReferenceDelta),
    ("reference", REFERENCE_UNPAIRED, ReferenceDelta),
]


def typed(rows: list[dict]) -> list[CapabilityResult]:
    """Result rows (``to_json`` form) as the results the report functions take."""
    return [CapabilityResult.from_json(row) for row in rows]


def row(**blocks: Any) -> dict[str, Any]:
    """A ``matrix.json`` result row as this version writes it (``threshold_met`` last)."""
    return {
        "file": "checks.yaml",
        "test": "t",
        "capability": "object/count",
        "task": "caption",
        "model": "m",
        "n": 40,
        "passed": 27,
        "pass_rate": 0.675,
        "ci_low": 0.52,
        "ci_high": 0.8,
        "threshold": 0.5,
        "chance": 0.5,
        "status": "passed",
        "line": 3,
        "criterion": "",
        "score_kind": "similarity",
        "ties": 0,
        "judged": "pass_rate",
        "metrics": {"text_score": 0.675},
        "slices": {},
        "failures": [],
        "unscored": {},
        "message": "",
        **blocks,
        "ci_low_clustered": 0.49,
        "ci_high_clustered": 0.82,
        "clusters": 31,
        "design_effect": 1.1,
        "all_of_slices": {"pair": {"pattern": {"mixed": {"groups": 2, "passed": 1, "rate": 0.5}}}},
        "reordered_share": 0.25,
        "threshold_met": True,
    }


@pytest.mark.parametrize(("key", "block", "kind"), SHAPES)
def test_every_block_shape_reads_typed_and_writes_back_unchanged(
    key: str, block: dict[str, Any], kind: type
) -> None:
    raw = row(**{key: block})
    result = CapabilityResult.from_json(json.loads(json.dumps(raw)))
    assert isinstance(getattr(result, key), kind)
    assert json.dumps(result.to_json()) == json.dumps(raw)
    assert CapabilityResult.from_json(result.to_json()) == result


def test_a_matrix_file_with_every_shape_rereads_byte_for_byte(tmp_path: Path) -> None:
    rows = [row(test=f"t{i}", line=i, **{key: block}) for i, (key, block, _) in enumerate(SHAPES)]
    rows.append(row(test="all", gate=GATE_COMPARISON, prior=PRIOR_APPLICABLE, reference=REFERENCE))
    models = [ModelMeta("m", "scores:m.jsonl", "abc")]
    text = matrix_json(matrix_document(models, typed(rows)))
    path = tmp_path / "matrix.json"
    path.write_text(text, encoding="utf-8")
    read_models, read_rows = read_matrix(path)
    assert matrix_json(matrix_document(read_models, read_rows)) == text


def test_blocks_in_memory_are_the_types_producers_use() -> None:
    raw = row(gate=GATE_WARNING, prior=PRIOR_NO_PRIOR, reference=REFERENCE)
    result = CapabilityResult.from_json(raw)
    assert result.gate == GateWarning("no baseline entry for this test")
    assert result.prior == PriorNotApplicable((), "hard_threshold not applied: no --vl-prior", 0.6)
    assert result.reference == ReferenceDelta("first", -2.0, 0.5, 1.0, 12, (3, 1))
    assert result.prior.applicable is False and PriorBlock.applicable is True


@pytest.mark.parametrize(
    ("key", "block", "where"),
    [
        ("gate", {**GATE_COMPARISON, "regressed": "no"}, r"result\.gate\.regressed"),
        ("gate", {k: v for k, v in GATE_COMPARISON.items() if k != "b"}, "missing key 'b'"),
        ("gate", {**GATE_COMPARISON, "p_mid": None}, r"result\.gate\.p_mid"),
        ("gate", {**GATE_COMPARISON, "warnings": [1]}, r"result\.gate\.warnings"),
        ("gate", {"warning": 3}, r"result\.gate"),
        ("prior", {**PRIOR_APPLICABLE, "hard_threshold_met": 1}, "hard_threshold_met"),
        ("prior", {**PRIOR_APPLICABLE, "priors": [1]}, r"result\.prior\.priors"),
        ("prior", {"applicable": False, "priors": []}, "reason"),
        ("reference", {**REFERENCE, "discordant": [1, 2, 3]}, r"reference\.discordant"),
    ],
)
def test_malformed_blocks_name_the_field(key: str, block: Any, where: str) -> None:
    with pytest.raises(ResultFormatError, match=where):
        CapabilityResult.from_json(row(**{key: block}))
