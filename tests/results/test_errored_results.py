"""Issue 48, class 6: an errored result has no pass rate (None in Python, null in matrix.json,
an empty CSV cell, no JUnit property, no logged scalar) and every reader of results takes it;
a live model raising in its forward pass is named by ``name=`` and the user's line; the
tensorboard check writes a probe file instead of trusting permission bits.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers.checklist_text import checklist
from PIL import Image

from pytest_vlcheck import evaluate
from pytest_vlcheck.cli import main
from pytest_vlcheck.loggers import LoggerSpecError, check_logger_spec
from pytest_vlcheck.report import read_report

CHECKLIST = checklist()


class Raising:
    """A scorer object whose image encoder raises (the line below is the user's line)."""

    name = "raising"
    fingerprint = "raising-v1"

    def encode_images(self, images):
        raise TypeError("forward() got an unexpected keyword argument 'pixel_values'")

    def encode_texts(self, texts):
        return [[1.0, 0.0]] * len(texts)


@pytest.fixture
def errored(tmp_path: Path):
    Image.new("RGB", (8, 8), (220, 20, 20)).save(tmp_path / "red.png")
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    run = evaluate(Raising(), tmp_path / "checks.yaml", name="step-200", no_cache=True,
                   report_dir=tmp_path / "rep")  # fmt: skip
    return tmp_path, run


def test_an_errored_result_has_no_pass_rate_anywhere(errored) -> None:
    root, run = errored
    (result,) = run.results
    assert result.status == "error"
    assert (result.pass_rate, result.ci_low, result.ci_high) == (None, None, None)
    assert not [name for name in run.scalars() if name.endswith("/pass_rate")]
    (row,) = json.loads((root / "rep" / "matrix.json").read_text())["results"]
    assert (row["pass_rate"], row["ci_low"], row["ci_high"]) == (None, None, None)
    assert read_report(root / "rep" / "matrix.json").results[0].pass_rate is None
    (cells,) = csv.DictReader((root / "rep" / "matrix.csv").open())
    assert (cells["pass_rate"], cells["ci_low"], cells["ci_high"]) == ("", "", "")
    assert "ERROR" in (root / "rep" / "matrix.md").read_text()
    assert main(["compare", str(root / "rep"), str(root / "rep")]) == 0
    assert main(["merge", str(root / "rep"), "-o", str(root / "merged")]) == 0
    assert read_report(root / "merged" / "matrix.json").results[0].pass_rate is None


def test_a_forward_pass_error_names_the_run_and_the_users_line(errored) -> None:
    _, run = errored
    message = run.results[0].message
    assert message.startswith("model 'step-200': encode_images at ")
    assert f"{Path(__file__)}:" in message and "Raising object" not in message
    assert message.endswith("raised TypeError: forward() got an unexpected keyword argument "
                            "'pixel_values'")  # fmt: skip


def test_the_junit_properties_leave_out_a_pass_rate_the_result_lacks(errored) -> None:
    from pytest_vlcheck.items import result_properties

    _, run = errored
    names = [name for name, _ in result_properties(run.results[0])]
    assert "vlcheck_status" in names
    assert not {"vlcheck_pass_rate", "vlcheck_ci_low", "vlcheck_ci_high"} & set(names)


def test_the_tensorboard_check_writes_rather_than_trusting_permission_bits() -> None:
    with pytest.raises(LoggerSpecError, match=r"/proc (cannot hold new files|is read-only)"):
        check_logger_spec("tensorboard:/proc/vlcheck-events", "--vl-log")


@pytest.mark.parametrize("ties", ["first", "fail", None])
def test_a_position_outside_ties_order_is_refused(tmp_path: Path, ties: str | None) -> None:
    from pytest_vlcheck.checklist import load_checklist
    from pytest_vlcheck.parsing.errors import ChecklistError

    rule = f"    ties: {ties}\n" if ties else ""
    (tmp_path / "checks.yaml").write_text(
        CHECKLIST.replace("    examples:\n", rule + "    examples:\n").replace(
            "negatives: [a blue square]}", "negatives: [a blue square], position: 1}"
        )
    )
    with pytest.raises(ChecklistError, match=rf"checks.yaml:{8 + bool(ties)}: 'position' places"):
        load_checklist(tmp_path / "checks.yaml")
    ordered = (tmp_path / "checks.yaml").read_text().replace(f"ties: {ties}", "ties: order")
    (tmp_path / "checks.yaml").write_text(ordered if ties else ordered.replace(
        "    examples:\n", "    ties: order\n    examples:\n"))  # fmt: skip
    (test,) = load_checklist(tmp_path / "checks.yaml").tests
    assert test.examples[0].position == 1
