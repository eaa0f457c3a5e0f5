"""``vlcheck watch SPEC CHECKLIST... --out DIR``: gate each checkpoint as training writes it.

The SPEC's checkpoint glob is expanded at every poll (no match yet is waiting, not an
error); each checkpoint that is whole (``watch.complete``) is evaluated once, in step
order, gated against ``--gate`` (the previous checkpoint, the best so far, or a baseline
file), its scalars logged at its step, its report and baseline kept under
``DIR/checkpoints/NAME/``, its row added to ``DIR/curves.csv`` and one line printed. A
restart with the same SPEC and DIR resumes from ``DIR/watch.json``. Exit status: 0 when no
checkpoint regressed, 1 when one did, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_vlcheck import bounds
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder
from pytest_vlcheck.errors import VlcheckUserError

__all__ = ["add_watch_command"]

MAX_SECONDS = 10**7
STOPPED = 130
"""The status of a watcher stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""


def add_watch_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="evaluate and gate each checkpoint of a glob as it is written",
        description="Watch a checkpoint glob: evaluate each checkpoint once, in step order, "
        "when it is completely written; gate it (--gate), log its scalars at its step, keep "
        "its report under --out and one curve row per checkpoint in OUT/curves.csv, and print "
        "one line per checkpoint. Killed and restarted with the same SPEC and --out, it "
        "evaluates only what is missing. Exit 0 when no checkpoint regressed, 1 when one did.",
        **with_examples(
            "vlcheck watch 'run=open_clip:cfg.json@ckpts/epoch_*.safetensors' checklists/ "
            "--out watch/",
            "vlcheck watch 'hf:out/checkpoint-*' checks.yaml --out watch/ --gate best "
            "--device cuda:7 --log tensorboard:runs",
            "vlcheck watch 'run=open_clip:cfg.json@ck/*.safetensors' checks.yaml --out w/ "
            "--gate baseline.json --idle-exit 600",
        ),
    )
    parser.add_argument("spec", metavar="SPEC", help="a --vl-model spec with a checkpoint glob")
    parser.add_argument(
        "checklists", nargs="+", metavar="CHECKLIST", help="checklist files or folders"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--gate",
        default="previous",
        metavar="previous|best|FILE",
        help="what each checkpoint is gated against: the previous checkpoint (default), the "
        "best so far (mean pass rate), or a baseline file",
    )
    _add_timing(parser)
    _add_run_options(parser)
    parser.set_defaults(handler=_watch)


def _add_timing(parser: argparse.ArgumentParser) -> None:
    seconds = bounds.argument(bounds.finite_number, 0, MAX_SECONDS)
    parser.add_argument(
        "--idle-exit",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop after this long with no new checkpoint and no evaluation (default: never)",
    )
    parser.add_argument(
        "--settle",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long a checkpoint that is not one .safetensors file must keep its size "
        "before it is read (default 10)",
    )
    parser.add_argument(
        "--poll",
        type=bounds.argument(bounds.finite_number, 0, MAX_SECONDS, open_low=True),
        default=2.0,
        metavar="SECONDS",
        help="seconds between looks at the glob (default 2)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log", action="append", default=[], metavar="SPEC", help="as --vl-log, repeatable"
    )
    parser.add_argument(
        "--device", default=None, help="as --vl-device: where to score (off the training GPUs)"
    )
    parser.add_argument("--batch-size", default=None, metavar="N", help="as --vl-batch-size")
    parser.add_argument("--precision", default=None, help="as --vl-precision")
    parser.add_argument("--max-drop", default=None, metavar="PTS", help="as --vl-max-drop")
    parser.add_argument("--alpha", default=None, metavar="A", help="as --vl-alpha")
    parser.add_argument("--cache-dir", default=None, metavar="DIR", help="as --vl-cache-dir")
    parser.add_argument("--no-cache", action="store_true", help="as --vl-no-cache")
    parser.add_argument(
        "--select", action="append", default=None, metavar="ID", help="tests to keep, repeatable"
    )


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """``evaluate``'s keywords for the options given (the others keep their defaults)."""
    names = ("device", "batch_size", "precision", "max_drop", "alpha", "cache_dir", "select")
    given = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    return given | ({"no_cache": True} if args.no_cache else {})


def _watch(args: argparse.Namespace) -> int:
    from pytest_vlcheck.watch.watcher import Watcher, WatchOptions

    options = WatchOptions(
        spec=args.spec,
        checklists=tuple(args.checklists),
        out=args.out,
        gate=args.gate,
        idle_exit=args.idle_exit,
        settle=args.settle,
        poll=args.poll,
        log=tuple(args.log),
        run_options=_run_options(args),
    )

    def say(line: str) -> None:
        print(line, flush=True)

    def warn(line: str) -> None:
        print(f"vlcheck watch: warning: {line}", file=sys.stderr, flush=True)

    try:
        check_output_folder(args.out)
        return Watcher(options, say, warn).run()
    except OutputPathError as exc:  # its message names -o, the other commands' option
        print(f"vlcheck watch: {str(exc).replace('-o ', '--out ', 1)}", file=sys.stderr)
        return 2
    except VlcheckUserError as exc:
        print(f"vlcheck watch: {exc.render()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the state on disk is whole: a restart resumes from it
        print(f"vlcheck watch: stopped; start it again to resume from {args.out}", file=sys.stderr)
        return STOPPED
