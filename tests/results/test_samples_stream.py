"""``samples.jsonl`` is written streaming, row by row, and still atomically (issue 25): the
file appears whole or not at all, and an interrupted write keeps the previous one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_vlcheck.results import CapabilityResult, ExampleOutcome
from pytest_vlcheck.results.samples import SampleRow, read_samples, sample_rows, write_samples

ROWS = 3000  # well past one write buffer, so the stream reaches the disk before it ends


def _row(index: int) -> SampleRow:
    return SampleRow("c.yaml", "t", "m", f"ex-{index}", index % 2 == 0, False, ((0.5, 0.25),))


def _temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".samples.jsonl.")]


def test_rows_reach_the_disk_while_they_are_made_and_the_target_only_at_the_end(
    tmp_path: Path,
) -> None:
    target = tmp_path / "samples.jsonl"
    target.write_text("previous\n", encoding="utf-8")
    seen_while_writing: list[int] = []

    def rows() -> Iterator[SampleRow]:
        for index in range(ROWS):
            yield _row(index)
        seen_while_writing.extend(p.stat().st_size for p in _temp_files(tmp_path))
        assert target.read_text(encoding="utf-8") == "previous\n"

    write_samples(target, rows())
    assert seen_while_writing and seen_while_writing[0] > 0  # streamed into the temp file
    assert read_samples(target) == [_row(index) for index in range(ROWS)]
    assert _temp_files(tmp_path) == []


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_previous_file_intact(
    tmp_path: Path, interruption: type[BaseException]
) -> None:
    target = tmp_path / "samples.jsonl"
    write_samples(target, [_row(0), _row(1)])
    before = target.read_bytes()

    def rows() -> Iterator[SampleRow]:
        for index in range(ROWS):
            if index == ROWS - 1:
                raise interruption("stopped")
            yield _row(index)

    with pytest.raises(interruption):
        write_samples(target, rows())
    assert target.read_bytes() == before
    assert _temp_files(tmp_path) == []


def test_sample_rows_are_one_per_outcome_in_result_order() -> None:
    def result(test: str, ids: list[str]) -> CapabilityResult:
        outcomes = tuple(ExampleOutcome(i, True, False, [[0.5, float("nan")]]) for i in ids)
        return CapabilityResult(
            "c.yaml", test, "a/b", "caption", "m", len(ids), len(ids), 1.0, 0.5, 1.0, 0.5,
            0.5, "passed", outcomes=outcomes,
        )  # fmt: skip

    rows = list(sample_rows([result("t1", ["a", "b"]), result("t2", ["c"])]))
    assert [(r.test, r.example) for r in rows] == [("t1", "a"), ("t1", "b"), ("t2", "c")]
    assert rows[0].to_json().endswith('"scores": [[0.5, null]], "texts": [], "images": []}')
