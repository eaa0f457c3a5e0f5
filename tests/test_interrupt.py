"""Ctrl-C during scoring loses nothing: the earlier report folder and baseline stay byte for
byte as they were, the exit status is 2 (interrupted), and no temporary file is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers.colour_scorer import SOURCE
from helpers.file_snapshot import files_under
from PIL import Image

CHECKLIST = """\
vlcheck: 1
tests:
  - id: color
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {image: red.png, caption: red, negatives: [blue]}
"""

BLOCKING = (
    SOURCE
    + '''
import os, time


class Blocking(ColourScorer):
    """Scores like ColourScorer, but with a file named 'block' present it says it has started
    scoring and waits there until the run is interrupted."""

    def encode_images(self, images):
        if os.path.exists("block"):
            open("scoring", "w").close()
            time.sleep(120)
        return super().encode_images(images)


def blocking():
    return Blocking()
'''
)
ARGS = (
    "-p",
    "no:cacheprovider",
    "--vl-model=py:colour_model:blocking",
    "--vl-report=rep",
    "--vl-save-baseline=base.json",
    "--vl-no-cache",  # the interrupted run must score, not read the good run's embeddings
)


def test_ctrl_c_while_scoring_keeps_the_earlier_report_and_baseline(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8), (220, 20, 20)).save(tmp_path / "red.png")
    (tmp_path / "colour_model.py").write_text(BLOCKING)
    (tmp_path / "checks.yaml").write_text(CHECKLIST)
    command = [sys.executable, "-m", "pytest", *ARGS]
    good = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    (tmp_path / "block").touch()
    before = files_under(tmp_path)
    assert {"rep/matrix.json", "rep/report.html", "base.json"} <= set(before)

    run = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "scoring").exists():
            assert run.poll() is None and time.monotonic() < deadline, "scoring never started"
            time.sleep(0.05)
        interrupted = time.monotonic()
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=60)
        stopped = time.monotonic() - interrupted
    finally:
        if run.poll() is None:
            os.kill(run.pid, signal.SIGKILL)
    assert run.returncode == 2, output  # pytest's "interrupted"
    assert "KeyboardInterrupt" in output
    # a generous bound (benchmarks/interrupt.py measures it: under 1 s for the bundled suite);
    # the traceback stops at pytest's frames, without the engine's arguments
    assert stopped < 15, f"{stopped:.1f} s to stop"
    assert "pytest_vlcheck" not in output.split("KeyboardInterrupt !!!")[-1]
    after = files_under(tmp_path)
    assert after.pop("scoring") == b""
    assert after == before  # report and baseline byte-identical, and nothing new anywhere
