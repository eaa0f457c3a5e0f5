"""How long Ctrl-C takes to stop a run: the bundled suite on ``tiny``, interrupted while it
scores, timed from SIGINT to the process's exit (target: under 1 s on a CPU).

    python benchmarks/interrupt.py [--after SECONDS] [--repeat N]

Each run starts pytest in a fresh process with the embedding cache off (so it is scoring, not
reading), waits until the progress line shows images being encoded (or ``--after`` seconds),
sends SIGINT and measures the time to exit. It prints each stop time, their median, and the
exit status (2: interrupted).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def one_stop(after: float) -> tuple[float, int]:
    """Seconds from SIGINT to exit, and the exit status, for one interrupted run."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            *(sys.executable, "-m", "pytest", "--vl-bundled", "--vl-model=tiny"),
            *("--vl-no-cache", "-p", "no:cacheprovider", "-q", f"--vl-report={folder}/rep"),
        ]
        proc = subprocess.Popen(
            command,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        time.sleep(after)
        started = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=300)
        return time.perf_counter() - started, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=20.0, help="seconds before Ctrl-C")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    stops = []
    for i in range(args.repeat):
        seconds, status = one_stop(args.after)
        stops.append(seconds)
        print(f"run {i + 1}: stopped {seconds:.2f} s after SIGINT (exit status {status})")
    print(f"median stop time: {statistics.median(stops):.2f} s over {len(stops)} runs")


if __name__ == "__main__":
    main()
