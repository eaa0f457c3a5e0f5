"""The watcher's parts without a model: when a checkpoint is whole, the resumable state, the
curves, and the command's usage errors and corrupt checkpoints (no torch needed)."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import COLOUR_SQUARES
from helpers.result_rows import gate_row, result_row
from safetensors.numpy import save_file

from pytest_vlcheck.cli import main
from pytest_vlcheck.models.checkpoints import glob_members, weights_part
from pytest_vlcheck.models.registry import parse_spec
from pytest_vlcheck.run.outcome import Run
from pytest_vlcheck.run.settings import Settings
from pytest_vlcheck.watch.complete import SettleClock, completeness, safetensors_completeness
from pytest_vlcheck.watch.curves import CurveRow, render_csv, rows_of_matrix
from pytest_vlcheck.watch.lines import checkpoint_line, outcome_of
from pytest_vlcheck.watch.state import Settled, WatchState, WatchStateError
from pytest_vlcheck.watch.watcher import Watcher, WatchOptions

SPEC = "run=open_clip:cfg.json@ck/epoch_*.safetensors"


def _weights(path: Path) -> bytes:
    save_file({"a": np.arange(12, dtype=np.float32), "b": np.ones((2, 3), np.float16)}, path)
    return path.read_bytes()


def test_a_safetensors_file_is_whole_exactly_at_the_size_its_header_gives(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    data = _weights(path)
    assert safetensors_completeness(path) == ("complete", "")
    for cut in (0, 5, 8, 20, len(data) - 1):  # no size field, part of the header, of the data
        path.write_bytes(data[:cut])
        assert safetensors_completeness(path) == ("writing", ""), cut
    path.write_bytes(data + b"\0")
    assert safetensors_completeness(path) == (
        "corrupt",
        f"{len(data) + 1} bytes where its header says {len(data)}",
    )
    path.write_bytes(struct.pack("<Q", 4) + b"{x}!" + b"\0" * 10)
    assert safetensors_completeness(path) == ("corrupt", "its header is not safetensors JSON")
    path.write_bytes(b"PK\x03\x04" * 4)  # a zip (torch.save): no header size field
    assert safetensors_completeness(path)[0] == "corrupt"


def test_other_files_and_folders_are_whole_once_unchanged_for_the_settle_time(
    tmp_path: Path,
) -> None:
    clock = SettleClock(settle=5.0)
    pt = tmp_path / "epoch_1.pt"
    pt.write_bytes(b"12")
    assert completeness(pt, clock, now=0.0) == ("writing", "")
    pt.write_bytes(b"1234")  # grew: the settle time starts again
    assert completeness(pt, clock, now=4.0) == ("writing", "")
    assert completeness(pt, clock, now=8.9) == ("writing", "")
    assert completeness(pt, clock, now=9.0) == ("complete", "")

    folder = tmp_path / "checkpoint-5"
    folder.mkdir()
    assert completeness(folder, clock, now=0.0) == ("writing", "")  # empty
    assert completeness(folder, clock, now=10.0) == ("writing", "")
    (folder / "config.json").write_text("{}")
    data = _weights(folder / "model.safetensors")
    (folder / "model.safetensors").write_bytes(data[:-3])
    assert completeness(folder, clock, now=20.0) == ("writing", "")
    (folder / "model.safetensors").write_bytes(data)
    assert completeness(folder, clock, now=21.0) == ("writing", "")
    assert completeness(folder, clock, now=26.0) == ("complete", "")
    (folder / "model.safetensors").write_bytes(data + b"x")
    assert completeness(folder, clock, now=40.0)[0] == "corrupt"


def test_the_state_resumes_as_written_and_refuses_another_watch(tmp_path: Path) -> None:
    state = WatchState(SPEC)
    state.settled.append(
        Settled("ck/epoch_1.safetensors", "run@epoch_1", 1, "no reference", "line", 0.5,
                "checkpoints/run@epoch_1/baseline.json", {"c.yaml::color": 0.5})
    )  # fmt: skip
    state.evaluating = "ck/epoch_2.safetensors"
    state.save(tmp_path)
    assert WatchState.resume(tmp_path, SPEC) == state
    with pytest.raises(WatchStateError, match="written by a watch of 'run=open_clip:cfg"):
        WatchState.resume(tmp_path, "other=hf:out/checkpoint-*")
    (tmp_path / "watch.json").write_text('{"vlcheck_watch": 1, "spec": "x", "checkpoints": 3}')
    with pytest.raises(WatchStateError, match=r"checkpoints: expected a list, got int; expected"):
        WatchState.resume(tmp_path, "x")
    assert WatchState.resume(tmp_path / "new", SPEC) == WatchState(SPEC)


def test_curves_are_one_row_per_checkpoint_with_every_digit() -> None:
    doc = {
        "models": [
            {"name": "run@epoch_1", "spec": "open_clip:c.json@ck/epoch_1.safetensors", "step": 1},
            {"name": "run@epoch_2", "spec": "open_clip:c.json@ck/epoch_2.safetensors", "step": 2},
        ],
        "results": [
            {"file": "a.yaml", "test": "t", "model": m, "n": 3, "status": s, "pass_rate": r}
            for m, s, r in (
                ("run@epoch_1", "passed", 2 / 3),
                ("run@epoch_2", "error", 0.0),
            )
        ],
    }
    rows = rows_of_matrix(doc)
    assert rows == [
        CurveRow(1, "ck/epoch_1.safetensors", {"a.yaml::t": 2 / 3}),
        CurveRow(2, "ck/epoch_2.safetensors", {"a.yaml::t": None}),  # errored: no point
    ]
    assert render_csv(rows) == (
        "step,file,a.yaml::t\n1,ck/epoch_1.safetensors,0.6666666666666666\n"
        "2,ck/epoch_2.safetensors,\n"
    )


def _project(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    (folder / "checks.yaml").write_text(COLOUR_SQUARES)
    (folder / "cfg.json").write_text("{}")
    (folder / "ck").mkdir()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["open_clip:cfg.json@ck/one.safetensors", "checks.yaml"], "holds no checkpoint glob"),
        ([SPEC, "missing.yaml"], "checklists: missing.yaml does not exist"),
        ([SPEC, "checks.yaml", "--gate", "nothing.json"], "nothing.json"),
        ([SPEC, "checks.yaml", "--log", "jsonl:no/such.jsonl"], "folder no does not exist"),
        ([SPEC, "checks.yaml", "--batch-size", "0"], "batch_size"),
        ([SPEC, "checks.yaml", "--out", "checks.yaml"], "--out checks.yaml is a file; expected"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    _project(tmp_path, monkeypatch)
    assert main(["watch", "--out", "w", "--idle-exit", "0", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("vlcheck watch: ") and message in line, line


def test_an_empty_glob_waits_and_a_corrupt_checkpoint_is_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, monkeypatch)
    watch = ["watch", SPEC, "checks.yaml", "--out", "w", "--idle-exit", "0.2", "--poll", "0.05"]
    assert main(watch) == 0  # nothing yet: waiting, then the idle exit
    assert capsys.readouterr() == ("", "")
    data = _weights(tmp_path / "whole.safetensors")
    (tmp_path / "ck" / "epoch_1.safetensors").write_bytes(data + b"trailing")
    (tmp_path / "ck" / "epoch_2.safetensors").write_bytes(data[:-1])  # still being written
    assert main(watch) == 0
    assert main(watch) == 0  # restarted: the corrupt one is not looked at again
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "vlcheck watch: warning: ck/epoch_1.safetensors: cannot be read "
        f"({len(data) + 8} bytes where its header says {len(data)}); skipped"
    ]
    state = json.loads((tmp_path / "w" / "watch.json").read_text())
    assert [(c["file"], c["outcome"]) for c in state["checkpoints"]] == [
        ("ck/epoch_1.safetensors", "corrupt")
    ]
    assert (tmp_path / "w" / "curves.csv").read_text() == "step,file\n"


def test_waiting_imports_no_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, monkeypatch)
    code = (
        "import sys\nfrom pytest_vlcheck.cli import main\n"
        f"assert main(['watch', {SPEC!r}, 'checks.yaml', '--out', 'w', '--idle-exit', '0']) == 0\n"
        "heavy = [m for m in ('torch', 'open_clip', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


def test_the_line_names_the_drops_and_counts_what_does_not_change_the_word() -> None:
    results = (
        result_row("color", "attribute/color", "failed", 10, 5, gate=gate_row(True)),
        result_row("size", "attribute/size", "failed", 10, 4, gate=gate_row(False)),  # not a drop
        result_row("shape", "attribute/shape", "failed", 10, 4),
        result_row("count", "attribute/count", "error", 0, 0),
    )
    run = Run(results=results, models=(), settings=Settings())
    assert outcome_of(run, gated=True) == "regressed"
    assert checkpoint_line("epoch_3.safetensors", run, "regressed", "epoch_2.safetensors") == (
        "epoch_3.safetensors regressed against epoch_2.safetensors: attribute/color (color) "
        "-10.0 pts, p 0.01; 2 tests below their threshold; 1 errored"
    )
    missed = Run(results=results[2:3], models=(), settings=Settings())
    assert outcome_of(missed, gated=False) == "no reference"
    assert checkpoint_line("epoch_1.safetensors", missed, "no reference", None) == (
        "epoch_1.safetensors passed (no reference); 1 test below its threshold"
    )


def test_the_reference_is_the_previous_in_step_order_the_best_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, monkeypatch)
    (tmp_path / "base.json").write_text('{"vlcheck_baseline": 1, "entries": []}')
    state = WatchState(SPEC)
    for step, mean in ((1, 0.9), (2, 0.5), (10, 0.9)):
        name = f"run@epoch_{step}"
        state.settled.append(
            Settled(f"ck/epoch_{step}.safetensors", name, step, "passed", "", mean,
                    f"checkpoints/{name}/baseline.json")
        )  # fmt: skip
    state.settled.append(Settled("ck/epoch_3.safetensors", "run@epoch_3", 3, "corrupt", ""))
    (tmp_path / "w").mkdir()
    state.save(tmp_path / "w")

    def reference(gate: str, file: str) -> tuple[str | None, Path | None]:
        options = WatchOptions(SPEC, ("checks.yaml",), tmp_path / "w", gate=gate)
        return Watcher(options, print, print)._reference(file)

    w = tmp_path / "w" / "checkpoints"
    # the nearest before it in step order (epoch_3 was corrupt: it has no baseline)
    assert reference("previous", "ck/epoch_4.safetensors") == (
        "epoch_2.safetensors",
        w / "run@epoch_2" / "baseline.json",
    )
    assert reference("previous", "ck/epoch_1.safetensors") == (None, None)
    # the highest mean pass rate, the later of two equal ones
    assert reference("best", "ck/epoch_11.safetensors")[0] == "epoch_10.safetensors"
    assert reference("base.json", "ck/epoch_4.safetensors") == ("base.json", Path("base.json"))


def test_vqa_model_folders_are_a_checkpoint_glob_and_a_served_url_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for step in (10, 5):
        (tmp_path / "out" / f"checkpoint-{step}").mkdir(parents=True)
    members = glob_members(parse_spec("run=vqa:out/checkpoint-*"))
    assert [(m.name, m.step, m.text) for m in members] == [
        ("run@checkpoint-5", 5, "vqa:out/checkpoint-5"),
        ("run@checkpoint-10", 10, "vqa:out/checkpoint-10"),
    ]
    assert weights_part("vqa", "http://host:8000/v1?x=1#model") == (
        "http://host:8000/v1?x=1#model",
        "",
        "",
    )


def test_ctrl_c_stops_the_watcher_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "checks.yaml").write_text(COLOUR_SQUARES)
    (tmp_path / "ck").mkdir()
    command = [sys.executable, "-m", "pytest_vlcheck.cli", "watch", SPEC, "checks.yaml"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    watcher = subprocess.Popen(
        [*command, "--out", "w", "--poll", "0.05"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "w").exists():  # --out is made once the options are checked
            assert watcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        watcher.send_signal(signal.SIGINT)
        _, errors = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 130
    assert errors == "vlcheck watch: stopped; start it again to resume from w\n"
