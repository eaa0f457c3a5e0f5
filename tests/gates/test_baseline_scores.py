"""Baselines' optional per-example ``scores`` and ``clusters`` (issue 41): saved, read back,
validated, absent in older files; scores shown beside today's for the examples a gate finds
flipped, clusters used by ``vlcheck compare`` on two baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_baseline import CONDITIONS, row

from pytest_vlcheck.gates.baseline import Baseline, BaselineError, make_entry
from pytest_vlcheck.gates.decision import gate


def entry(scores: dict | None, clusters: dict | None = None):
    outcomes = {"x0": True, "x1": True, "x2": False}
    return make_entry(
        row("color", "tiny"),
        outcomes,
        spec="tiny",
        fingerprint="abc",
        content_hash="h",
        conditions=CONDITIONS,
        scores=scores,
        clusters=clusters,
    )


def test_scores_round_trip_and_non_finite_scores_are_null(tmp_path: Path) -> None:
    saved = entry({"x0": [[0.6, 0.4]], "x1": [[0.7, float("nan")]], "x2": [[0.1, 0.9]]})
    path = tmp_path / "b.json"
    Baseline((saved,)).dump(path)
    doc = json.loads(path.read_text())
    assert doc["entries"][0]["scores"]["x1"] == [[0.7, None]]
    loaded = Baseline.load(path).entries[0]
    assert loaded.scores == {"x0": [[0.6, 0.4]], "x1": [[0.7, None]], "x2": [[0.1, 0.9]]}


def test_a_baseline_without_scores_loads_and_writes_none(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    Baseline((entry(None),)).dump(path)
    doc = json.loads(path.read_text())
    assert "scores" not in doc["entries"][0]
    assert Baseline.load(path).entries[0].scores == {}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("scores", {"nope": [[0.5]]}, r"scores\['nope'\]: expected an example id of 'outcomes'"),
        ("scores", {"x0": [["a"]]}, r"scores\['x0'\]: expected a list of lists of numbers or null"),
        ("scores", {"x0": 0.5}, r"scores\['x0'\]"),
        ("clusters", {"nope": "img"}, r"clusters\['nope'\]: expected an example id of 'outcomes'"),
        ("clusters", {"x0": 3}, r"clusters\['x0'\]: expected a string, got 3"),
    ],
)
def test_bad_scores_or_clusters_are_one_clear_error(
    tmp_path: Path, key: str, value: dict, message: str
) -> None:
    doc = json.loads(Baseline((entry(None),)).to_json())
    doc["entries"][0][key] = value
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match=message):
        Baseline.load(path)


def test_clusters_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    Baseline((entry(None, {"x0": "img0", "x1": "img0"}),)).dump(path)
    assert json.loads(path.read_text())["entries"][0]["clusters"] == {"x0": "img0", "x1": "img0"}
    assert Baseline.load(path).entries[0].clusters == {"x0": "img0", "x1": "img0"}


def test_the_gate_keeps_both_sides_of_the_flipped_examples() -> None:
    base = entry({"x0": [[0.6, 0.4]], "x1": [[0.7, 0.2]], "x2": [[0.1, 0.9]]})
    now = {"x0": False, "x1": True, "x2": True}
    grids = {"x0": [[0.3, 0.5]], "x1": [[0.8, 0.1]], "x2": [[0.9, float("inf")]]}
    g = gate(now, 2 / 3, base, m=1, alpha=0.05, max_drop_pts=2.0, current_scores=grids)
    assert (g.lost, g.gained) == (("x0",), ("x2",))
    assert g.scores == {
        "x0": {"now": [[0.3, 0.5]], "baseline": [[0.6, 0.4]]},
        "x2": {"now": [[0.9, None]], "baseline": [[0.1, 0.9]]},
    }
    # an older baseline: today's side only
    older = gate(now, 2 / 3, entry(None), m=1, alpha=0.05, max_drop_pts=2.0, current_scores=grids)
    assert older.scores["x0"] == {"now": [[0.3, 0.5]]}
