"""The ``--vl-*`` command-line options as data: flag, argparse keywords and help text.

pytest registers them from this table; the Python API takes the same options as keyword
arguments (``run.settings.DEFAULTS``). Kept free of pytest, so the help text has one home.
"""

from __future__ import annotations

from typing import Any, Literal

from pytest_vlcheck.engine.judging.missing import MISSING_POLICIES
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP, GATE_CLUSTERS
from pytest_vlcheck.models.backends.served.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_REQUEST_TIMEOUT,
)
from pytest_vlcheck.models.backends.vqa_prompt import (
    DEFAULT_ANSWER,
    DEFAULT_QUESTION,
    VQA_MODES,
    VQA_PRESETS,
)
from pytest_vlcheck.models.protocol import DECODES, PRECISIONS

COMMAND_LINE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--vl-model",
        {
            "action": "append",
            "default": [],
            "metavar": "SPEC",
            "help": "model to test, repeatable: clip, tiny, open_clip:ARCH[@PRETRAINED], "
            "hf:NAME_OR_DIR, vqa:NAME_OR_DIR, vqa:http://HOST:PORT/v1#MODEL@REVISION (a served "
            "model), scores:FILE, py:MODULE:FACTORY; NAME=SPEC names it",
        },
    ),
    ("--vl-device", {"default": None, "help": "auto (cuda, mps, cpu), cpu, cuda:0, ..."}),
    (
        "--vl-batch-size",
        {
            "default": None,
            "metavar": "N",
            "help": "inputs per forward pass (1 to 65536), or auto (the default: 256 on a GPU, "
            "halved while it runs out of memory; 64 elsewhere)",
        },
    ),
    (
        "--vl-precision",
        {
            "choices": PRECISIONS,
            "default": None,
            "help": "forward-pass precision; decisions always use fp32 scores",
        },
    ),
    (
        "--vl-decode",
        {
            "choices": DECODES,
            "default": None,
            "help": "where JPEGs are decoded and resized: cpu (PIL, the default) or gpu (on the "
            "model's device; other images stay on the CPU)",
        },
    ),
    (
        "--vl-workers",
        {
            "default": None,
            "metavar": "N",
            "help": "cores that prepare images beside a model on an accelerator: N loader "
            "threads and, from 2, N processes that decode and render (default: this "
            "process's share of its cores among xdist workers and torchrun ranks)",
        },
    ),
    (
        "--vl-vqa-question",
        {
            "default": DEFAULT_QUESTION,
            "metavar": "TEMPLATE",
            "help": "what a generative model (vqa:) is asked, {} standing for the text "
            "(default: VQAScore's question)",
        },
    ),
    (
        "--vl-vqa-answer",
        {
            "default": DEFAULT_ANSWER,
            "metavar": "TEXT",
            "help": "the answer whose probability is a generative model's score (default Yes)",
        },
    ),
    (
        "--vl-vqa-mode",
        {
            "choices": VQA_MODES,
            "default": "answer",
            "help": "answer: P(answer | image, question) (VQAScore); caption: the text's own "
            "likelihood given the image",
        },
    ),
    (
        "--vl-vqa-preset",
        {
            "choices": VQA_PRESETS,
            "default": None,
            "help": "t2v: score a LLaVA-1.5 model as t2v_metrics' VQAScore does (its system "
            "message and prompt, EOS scored, images padded to a square); default: the "
            "checkpoint's chat template",
        },
    ),
    (
        "--vl-concurrency",
        {
            "default": None,
            "metavar": "N",
            "help": "requests in flight at once to a served model (vqa:http://...), 1 to 1024 "
            f"(default {DEFAULT_CONCURRENCY})",
        },
    ),
    (
        "--vl-request-timeout",
        {
            "type": float,
            "default": None,
            "metavar": "SECONDS",
            "help": "how long one request to a served model may take before the run stops "
            f"(default {DEFAULT_REQUEST_TIMEOUT:g})",
        },
    ),
    (
        "--vl-api-key-env",
        {
            "default": None,
            "metavar": "VAR",
            "help": "the environment variable holding a served model's API key (sent as a "
            "bearer token; never printed, logged, cached or written)",
        },
    ),
    (
        "--vl-image-root",
        {
            "default": None,
            "metavar": "DIR",
            "help": "resolve image paths here instead of each checklist's image_root",
        },
    ),
    (
        "--vl-threshold",
        {
            "type": float,
            "default": None,
            "metavar": "RATE",
            "help": "override every test's pass-rate threshold (0 to 1)",
        },
    ),
    (
        "--vl-missing",
        {
            "choices": MISSING_POLICIES,
            "default": None,
            "help": "unloadable images: error the test (default) or skip those examples",
        },
    ),
    (
        "--vl-cache-dir",
        {
            "default": None,
            "metavar": "DIR",
            "help": "root of the embedding cache and of downloaded URL images (default: pytest's "
            "cache dir)",
        },
    ),
    (
        "--vl-no-cache",
        {
            "action": "store_true",
            "default": None,
            "help": "encode everything: do not read or write the embedding cache",
        },
    ),
    (
        "--vl-cache-size",
        {
            "default": None,
            "metavar": "SIZE",
            "help": "bound on the embedding cache and, on its own, on the pixel cache, e.g. "
            "500MB, 2GB (default 2GB); the least recently used entries are evicted",
        },
    ),
    (
        "--vl-image-memory",
        {
            "default": None,
            "metavar": "SIZE",
            "help": "host memory for the preprocessed images a live model (evaluate(model, "
            "...), the training callbacks) keeps across calls, e.g. 500MB (default 2GB); "
            "over it the first images are kept and the rest prepared again",
        },
    ),
    (
        "--vl-bundled",
        {
            "action": "store_true",
            "default": False,
            "help": "also collect the checklists shipped with pytest-vlcheck (only "
            "them when no paths are given)",
        },
    ),
    (
        "--vl-allow-no-model",
        {
            "action": "store_true",
            "default": False,
            "help": "without --vl-model, skip checklist items and vl_model tests instead of "
            "stopping with a usage error",
        },
    ),
    (
        "--vl-allow-no-gate",
        {
            "action": "store_true",
            "default": False,
            "help": "with --vl-baseline, run the items ungated when the baseline has no entry "
            "for any of them, instead of stopping with a usage error (a first run)",
        },
    ),
    (
        "--vl-report",
        {
            "default": None,
            "metavar": "DIR",
            "help": "write matrix.json, matrix.md, matrix.csv and report.html here",
        },
    ),
    (
        "--vl-max-image-pixels",
        {
            "type": int,
            "default": None,
            "metavar": "N",
            "help": "decode images up to N pixels (default: Pillow's decompression-bomb limit)",
        },
    ),
    (
        "--vl-baseline",
        {
            "default": None,
            "metavar": "FILE",
            "help": "gate every test against this baseline: fail on a significant drop",
        },
    ),
    (
        "--vl-save-baseline",
        {
            "default": None,
            "metavar": "FILE",
            "help": "merge this run's measured tests into a baseline file (created if absent)",
        },
    ),
    (
        "--vl-max-drop",
        {
            "type": float,
            "default": DEFAULT_MAX_DROP,
            "metavar": "PTS",
            "help": "a drop must exceed this many points to fail the gate (0 to 100, default 2.0)",
        },
    ),
    (
        "--vl-alpha",
        {
            "type": float,
            "default": DEFAULT_ALPHA,
            "metavar": "A",
            "help": "significance level of the gate in (0, 1), Bonferroni-corrected over the "
            "items gated (default 0.05)",
        },
    ),
    (
        "--vl-gate-clusters",
        {
            "choices": GATE_CLUSTERS,
            "default": "on",
            "help": "on (default): test a change with the clustered mid-p when examples share "
            "an image; off: gate the examples as independent (the exact mid-p)",
        },
    ),
    (
        "--vl-baseline-model",
        {
            "default": None,
            "metavar": "NAME",
            "help": "the baseline model every run model is compared with",
        },
    ),
    (
        "--vl-gate-only",
        {
            "action": "store_true",
            "default": False,
            "help": "report threshold verdicts but fail items only on gate regressions",
        },
    ),
    (
        "--vl-prior",
        {
            "action": "append",
            "default": [],
            "metavar": "SPEC",
            "help": "a text-only language-model prior, repeatable (perplexities averaged): "
            "hf:NAME_OR_DIR or py:MODULE:FACTORY; adds hard-test accuracy per caption/group test",
        },
    ),
    (
        "--vl-shard",
        {
            "default": None,
            "metavar": "K/N|auto",
            "help": "run only job K of N (CI matrices): tests split by example count, "
            "deterministically; merge the report folders with 'vlcheck merge'; auto: K and N "
            "from a Slurm job array or a Kubernetes indexed Job (with VLCHECK_SHARD_COUNT)",
        },
    ),
    (
        "--vl-log",
        {
            "action": "append",
            "default": [],
            "metavar": "SPEC",
            "help": "send each model's scalars to a logger, repeatable: tensorboard:DIR, wandb, "
            "mlflow, jsonl:FILE",
        },
    ),
    (
        "--vl-step",
        {
            "default": None,
            "metavar": "N",
            "help": "the training step the logged scalars belong to (a checkpoint glob reads "
            "each checkpoint's from its file name)",
        },
    ),
)
"""Each option's flag and its argparse keywords, in ``pytest --help`` order."""

INI_TWINS: tuple[tuple[str, Literal["linelist", "string", "bool"]], ...] = (
    ("model", "linelist"),
    ("prior", "linelist"),
    ("log", "linelist"),
    ("device", "string"),
    ("batch_size", "string"),
    ("precision", "string"),
    ("decode", "string"),
    ("workers", "string"),
    ("concurrency", "string"),
    ("api_key_env", "string"),
    ("missing", "string"),
    ("cache_size", "string"),
    ("image_memory", "string"),
    ("no_cache", "bool"),
)
"""The options with an ini twin (``vl_<key>``), by Python name, and pytest's ini type; the
twin's default is the option's (``run.settings.DEFAULTS``)."""
