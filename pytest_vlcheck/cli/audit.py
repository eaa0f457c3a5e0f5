"""``vlcheck audit CHECKLIST... [--prior SPEC] [--margin 10] [--strict]``: audit checklists.

For every test: blind baselines far above chance (built-in text-only ones always, the prior
when given), degenerate negatives, duplicates and slices too small to read. Exit status: 0,
or 1 when something is flagged and ``--strict`` is given; 2 on a bad checklist or prior.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_vlcheck import bounds, fmt
from pytest_vlcheck.audit import TestAudit, audit_subject, audit_test
from pytest_vlcheck.checklist import ChecklistError, is_checklist_file, load_checklist
from pytest_vlcheck.cli.help_examples import with_examples

SHOWN_IDS = 5


def add_audit_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="find tests a blind model solves and degenerate or duplicate examples",
        description="Audit checklists (files, or folders searched for checklists): text-only "
        "baselines that never see the image (unigram, bigram, length, word overlap; "
        "leave-one-out, a tie is wrong) and an optional language-model prior, flagged when "
        "their 95% Wilson lower bound beats chance by MARGIN points; negatives identical "
        "to the caption or only reordering its words; duplicate examples and images; "
        "slices too small to read.",
        **with_examples(
            "vlcheck audit checklists/", "vlcheck audit sugarcrepe.yaml --prior hf:gpt2 --strict"
        ),
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="CHECKLIST")
    parser.add_argument(
        "--prior",
        action="append",
        default=[],
        metavar="SPEC",
        help="a language-model prior, hf:NAME_OR_DIR or py:MODULE:FACTORY (repeatable: "
        "perplexities are averaged)",
    )
    parser.add_argument(
        "--margin",
        type=bounds.argument(bounds.finite_number, 0, 100),
        default=10.0,
        help="points above chance that flag (0 to 100, default 10)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit with status 1 when something is flagged"
    )
    parser.add_argument("--device", default="auto", help="device of the prior (default auto)")
    parser.add_argument(
        "--batch-size",
        type=bounds.argument(bounds.whole_number, 1, bounds.MAX_BATCH_SIZE),
        default=64,
        help="texts per prior call",
    )
    parser.add_argument("--precision", default="fp32", help="fp32, fp16 or bf16 (GPU)")
    parser.set_defaults(handler=_audit)


def _paths(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.y*ml")) if is_checklist_file(p))
        else:
            yield path


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f", ... (+{len(ids) - SHOWN_IDS})" if len(ids) > SHOWN_IDS else "")


def format_audit(audit: TestAudit) -> list[str]:
    """The lines for one test: a header naming FILE:LINE and id, then one line per finding."""
    subject = audit.subject
    n = len({c.example_id for c in subject.choices})
    head = f"{subject.file}:{subject.line}: {subject.test_id} ({subject.task}, n={n})"
    if audit.baselines:
        assert audit.chance is not None
        best = max(audit.baselines, key=lambda b: b.rate)
        head += (
            f": chance {100 * audit.chance:.1f}%, best blind baseline {best.name} "
            f"{100 * best.rate:.1f}%"
        )
    else:
        head += f": text baselines {subject.text_note}"
    head += ": FLAGGED" if audit.flagged else ": ok"
    lines = [head]
    for finding in audit.findings:
        label = "flag" if finding.flag else "note"
        ids = f": examples {_ids(finding.example_ids)}" if finding.example_ids else ""
        lines.append(f"  {label}: {finding.message}{ids}")
    return lines


def _load_prior(args: argparse.Namespace):  # -> AveragePrior | None
    if not args.prior:
        return None
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.priors import load_priors

    options = ModelOptions(args.device, args.batch_size, args.precision)
    return load_priors(args.prior, options)


def _audit(args: argparse.Namespace) -> int:
    from pytest_vlcheck.priors import PriorLoadError, PriorSpecError

    paths = list(_paths(args.paths))
    if not paths:
        print("vlcheck audit: no checklist files found", file=sys.stderr)
        return 2
    try:
        checklists = [load_checklist(path) for path in paths]
        prior = _load_prior(args)
    except (ChecklistError, PriorSpecError, PriorLoadError) as exc:
        print(exc, file=sys.stderr)
        return 2
    perplexity = prior.perplexity if prior is not None else None
    tests = flagged = 0
    for checklist in checklists:
        for test in checklist.tests:
            audit = audit_test(audit_subject(test), perplexity, args.margin)
            print("\n".join(format_audit(audit)))
            tests += 1
            flagged += audit.flagged
    files = fmt.plural(len(checklists), "file")
    print(f"vlcheck audit: {fmt.plural(tests, 'test')} in {files}, {flagged} flagged")
    return 1 if flagged and args.strict else 0
