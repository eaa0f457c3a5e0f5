"""Issue 41's four cases end to end, as a user meets them: ``scores:`` files, a baseline saved
from checkpoint A, checkpoint B gated against it (caption tests whose examples share images
``img{i % 6}.png``), read in the terminal, JUnit, ``matrix.json`` and ``vlcheck compare``.

One checklist holds the four cases and two unchanged tests, so m = 6 (alpha/m 0.0083), the
setting where Durkalski's clustered McNemar could never fail an item on 6 images.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pytest_vlcheck.cli import main

# test id: (examples, images, wrong in A, wrong in B)
CASES = {
    "sixty": (60, 6, set(), set(range(20))),  # 20 lost, 0 gained, 3-4 per image
    "hundred": (100, 6, set(range(30, 50)), set(range(30))),  # 30 lost, 20 gained
    "one_image": (40, 1, set(), set(range(16))),  # 16 lost, all on one image
    "spread": (40, 6, set(), {0, 1, 2, 3}),  # 4 lost, each on its own image
    "same_a": (20, 6, set(), set()),
    "same_b": (20, 6, set(), set()),
}


def checklist() -> str:
    lines = ["vlcheck: 1", "tests:"]
    for test, (n, images, _, _) in CASES.items():
        lines += [
            f"  - id: {test}",
            f"    capability: relation/{test}",
            "    task: caption",
            "    threshold: 0.5",
            "    examples:",
        ]
        lines += [
            f"      - {{id: '{i}', image: img{i % images}.png, caption: {test}{i}, "
            f"negatives: [{test}not{i}]}}"
            for i in range(n)
        ]
    return "\n".join(lines) + "\n"


def scores(checkpoint: int) -> str:
    """A scores file: checkpoint 0 (A) or 1 (B) gets exactly its examples wrong."""
    records = []
    for test, case in CASES.items():
        n, images, wrong = case[0], case[1], case[2 + checkpoint]
        for i in range(n):
            true, negative = (0.4, 0.6) if i in wrong else (0.6, 0.4)
            image = f"img{i % images}.png"
            records.append({"image": image, "text": f"{test}{i}", "score": true})
            records.append({"image": image, "text": f"{test}not{i}", "score": negative})
    return "\n".join(json.dumps(r) for r in records) + "\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", cases=checklist())
    pytester.makefile(".jsonl", a=scores(0), b=scores(1))
    saved = pytester.runpytest("--vl-model=A=scores:a.jsonl", "--vl-save-baseline=base.json")
    saved.assert_outcomes(passed=6)
    return pytester


VERDICTS = [
    "cases.yaml::sixty [[]B]: regressed: dropped 33.3 pts, significant (clustered mid-p 9.5e-07 "
    "< alpha/m 0.0083; 20 lost, 0 gained in 6 clusters, design effect 1.00)",
    "cases.yaml::hundred [[]B]: dropped 10.0 pts, not significant (clustered mid-p 0.16 >= "
    "alpha/m 0.0083; 30 lost, 20 gained in 6 clusters, design effect 1.00)",
    "cases.yaml::one_image [[]B]: dropped 40.0 pts, not tested for significance: the 40 paired "
    "examples form 1 cluster *; give the examples more images, group them with a `cluster:` "
    "tag, or gate them as independent with --vl-gate-clusters=off",
    "cases.yaml::spread [[]B]: dropped 10.0 pts, not significant (clustered mid-p 0.062 >= "
    "alpha/m 0.0083; 4 lost, 0 gained in 6 clusters, design effect 1.00)",
]


def gate_b(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest(
        "--vl-model=B=scores:b.jsonl",
        "--vl-baseline=base.json",
        "--vl-report=rep",
        "--junitxml=junit.xml",
        *args,
    )


def test_the_four_cases_serially(project: pytest.Pytester, capsys: pytest.CaptureFixture) -> None:
    result = gate_b(project, "--vl-save-baseline=b.json")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*REGRESSED relation/sixty: *(gate: regressed: dropped 33.3*"])
    result.stdout.fnmatch_lines(["*- vlcheck gate -*", *VERDICTS])
    result.stdout.fnmatch_lines(["*lost: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 (+10 more)*"])
    # JUnit: only the regression fails, with the gate's words
    cases = {c.get("name"): c for c in ET.parse(project.path / "junit.xml").iter("testcase")}
    failed = {name.split("[")[0] for name, c in cases.items() if c.find("failure") is not None}
    assert failed == {"sixty"}
    failure = next(c for n, c in cases.items() if n.startswith("sixty")).find("failure")
    assert failure is not None and "clustered mid-p 9.5e-07 < alpha/m 0.0083" in (
        failure.get("message", "") + (failure.text or "")
    )
    # matrix.json: the deciding test, its p and the flipped examples
    rows = {
        r["test"]: r["gate"]
        for r in json.loads((project.path / "rep" / "matrix.json").read_text())["results"]
    }
    assert rows["sixty"]["regressed"] and rows["sixty"]["test"] == "clustered_midp"
    assert rows["sixty"]["p_mid"] == 2**-20 and len(rows["sixty"]["lost"]) == 20
    assert rows["hundred"]["p_mid"] >= 0.16 and not rows["hundred"]["regressed"]
    assert rows["one_image"]["test"] == "few_clusters" and rows["one_image"]["p_mid"] == 1
    assert rows["spread"]["p_mid"] == 0.0625 and not rows["spread"]["regressed"]
    # report.html: what flipped, the first lost ones as the report kept them (texts, scores)
    html = (project.path / "rep" / "report.html").read_text()
    assert "<summary>B: 20 lost, 0 gained since the baseline (A)</summary>" in html
    assert "<p>lost (first 10 of 20):</p>" in html and "sixtynot0" in html
    assert "<summary>B: 30 lost, 20 gained since the baseline (A)</summary>" in html
    assert '<p>gained (first 10 of 20):</p>\n<p class="example"><b>30</b></p>' in html
    # the baseline saved every example's scores: a flipped one shows both sides
    assert '<p class="meta">scores at the baseline 0.6000 0.4000; now 0.4000 0.6000</p>' in html
    assert rows["sixty"]["scores"]["0"] == {
        "baseline": [[pytest.approx(0.6), pytest.approx(0.4)]],
        "now": [[pytest.approx(0.4), pytest.approx(0.6)]],
    }
    # vlcheck compare, baseline against the report: the same tests, the same marks
    capsys.readouterr()
    assert main(["compare", str(project.path / "base.json"), str(project.path / "rep")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("relation/")]
    marked = {line.split()[0] for line in rows if "▼" in line}
    assert marked == {"relation/sixty"}
    assert "too few clusters to test" in next(r for r in rows if r.startswith("relation/one_"))
    assert "relation/sixty [rep]: lost 20: 0, 1, 2, 3, 4 ..." in out
    # two baselines (they keep each example's cluster): the same marks
    assert main(["compare", str(project.path / "base.json"), str(project.path / "b.json")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("relation/")]
    assert {line.split()[0] for line in rows if "▼" in line} == {"relation/sixty"}
    assert "too few clusters to test" in next(r for r in rows if r.startswith("relation/one_"))


def test_one_case_under_xdist_and_with_clusters_off(project: pytest.Pytester) -> None:
    result = gate_b(project, "-n", "2", "-k", "sixty or one_image")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*- vlcheck gate -*"])
    result.stdout.fnmatch_lines([VERDICTS[0].replace("0.0083", "0.025")])
    # off: the examples are gated as independent, so 16 lost of 40 on one image regress
    off = gate_b(project, "-k", "one_image", "--vl-gate-clusters=off")
    off.assert_outcomes(failed=1)
    off.stdout.fnmatch_lines(["*regressed: dropped 40.0 pts, significant (McNemar mid-p 1.5e-05*"])
