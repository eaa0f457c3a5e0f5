"""The per-rank bodies of ``run/test_distributed.py``: each rank of a gloo process group on the CPU
evaluates every model variant collectively and writes what it saw to ``rank<N>.json``; the
test reads those files (an assertion inside a rank would only say "process 1 failed")."""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

COLOURS = 24
"""Images (and unique captions) in the checklist: with batches of 2, 12 batches of each
kind, shared 6/6 by two ranks and 4/4/4 by three."""
BATCH = 2
TIMEOUT = 20.0
"""``distributed_timeout`` of the error cases: a rank that never comes is named within it."""


def preloaded_forkserver() -> str:
    """The start method for rank processes: "forkserver", its server importing torch,
    open_clip and transformers once (when it starts: the first rank a test process starts).

    Each rank is then a fresh fork of that server (not of the test process, whose state it
    would inherit) that need not import them again, as a "spawn" rank does: ~12 s of CPU
    saved per rank."""
    import multiprocessing

    multiprocessing.set_forkserver_preload(["torch", "open_clip", "transformers"])
    return "forkserver"


def write_checklist(directory: Path) -> Path:
    """Two caption tests over ``COLOURS`` squares, each caption unique."""
    from PIL import Image

    examples: list[list[str]] = [[], []]
    captions = [f"a square of shade {i}" for i in range(COLOURS)]
    for i in range(COLOURS):
        colour = (10 * i, 240 - 9 * i, (37 * i) % 256)
        Image.new("RGB", (32, 32), colour).save(directory / f"c{i}.png")
        negatives = [captions[(i + 1) % COLOURS], captions[(i + 5) % COLOURS]]
        examples[i % 2].append(
            f"      - {{image: c{i}.png, caption: {captions[i]}, negatives: {negatives}}}"
        )
    tests = [
        f"  - id: shades{t}\n    capability: attribute/shade\n    task: caption\n"
        f"    threshold: 0.0\n    examples:\n" + "\n".join(examples[t])
        for t in range(2)
    ]
    path = directory / "checks.yaml"
    path.write_text("vlcheck: 1\ntests:\n" + "\n".join(tests) + "\n", encoding="utf-8")
    return path


def run_rank(rank: int, world: int, port: int, workdir: str, hf_dir: str) -> None:
    """Every variant on this rank; what it saw goes to ``workdir/rank<rank>.json``."""
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    work = Path(workdir)
    writes: list[str] = []
    sys.addaudithook(_writes_under(work, writes))
    seen: dict[str, Any] = {}
    for family in ("open_clip", "transformers"):
        build = _builder(family, Path(hf_dir))
        seen[family] = _variants(rank, work, build, writes)
    seen["spec"] = _spec_model(rank, work)
    if world == 2:  # the callbacks' trainings: one world size is enough
        dist.barrier()
        seen["training"] = train_with_callbacks(rank, world, work, Path(hf_dir))
    seen["errors"] = _error_cases(rank, work, _builder("open_clip", Path(hf_dir)))
    (work / f"rank{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()


def _variants(
    rank: int, work: Path, build: Callable[[], tuple[Any, dict]], writes: list[str]
) -> dict[str, Any]:
    from pytest_vlcheck import evaluate

    checklist = work / "checks.yaml"
    model, extra = build()
    alone = work / f"single-{rank}"  # thumbnails are named by content: the same names
    single = evaluate(
        model,
        checklist,
        batch_size=BATCH,
        no_cache=True,
        report_dir=alone,
        distributed=False,
        **extra,
    )
    seen: dict[str, Any] = {
        "alone": {  # distributed=False: this rank's whole evaluation, as outside a group
            "ranks": len(single.ranks),
            "encoded": [s.images_encoded + s.texts_encoded for s in single.stats.values()],
        }
    }
    for variant in ("plain", "ddp", "fsdp2", "fsdp1"):
        model, extra = build()
        logged: list[tuple[dict, int | None]] = []
        log = logged.append
        del writes[:]
        started = time.perf_counter()
        run = evaluate(
            _wrapped(model, variant),
            checklist,
            batch_size=BATCH,
            no_cache=True,
            step=7,
            report_dir=work / f"report-{variant}",
            log=lambda scalars, step, log=log: log((scalars, step)),
            **extra,
        )
        seen[variant] = {
            "same_results": _rows(run) == _rows(single),
            "statuses": sorted({result.status for result in run.results}),
            "seconds": time.perf_counter() - started,
            "writes": sorted(set(writes)),
            "logged": [[sorted(s), step] for s, step in logged],
            "scalars": sorted(run.scalars()),
            "encoded": [
                [s.images_encoded + s.texts_encoded for s in stats.values()] for stats in run.ranks
            ],
            "total": [s.images_encoded + s.texts_encoded for s in run.stats.values()],
            "checksum": _checksum(model),
            "single_checksum": _checksum(build()[0]),
        }
    return seen


def _spec_model(rank: int, work: Path) -> dict[str, Any]:
    """A spec string scored with one embedding cache that every rank writes: the first call
    encodes (each rank its share), the second reads everything from the cache."""
    from pytest_vlcheck import evaluate
    from pytest_vlcheck.tiny import TINY_SPEC

    checklist = work / "checks.yaml"
    options = {"batch_size": BATCH, "device": "cpu"}
    single = evaluate(TINY_SPEC, checklist, no_cache=True, distributed=False, **options)
    calls = [evaluate(TINY_SPEC, checklist, cache_dir=work / "cache", **options) for _ in "12"]
    return {
        "same_results": [_rows(run) == _rows(single) for run in calls],
        "encoded": [
            [s.images_encoded + s.texts_encoded for s in run.stats.values()] for run in calls
        ],
        "cached": [[s.cached for s in run.stats.values()] for run in calls],
    }


def _error_cases(rank: int, work: Path, build: Callable[[], tuple[Any, dict]]) -> dict[str, Any]:
    """A tokenizer failing on rank 1 only (an errored test on every rank); a model failing to
    load on rank 1 only (every rank raises); ``evaluate`` called on rank 0 alone."""
    from pytest_vlcheck import evaluate

    checklist = work / "checks.yaml"
    seen: dict[str, Any] = {}
    model, extra = build()
    if rank == 1:
        extra["tokenizer"] = _failing
    run = evaluate(model, checklist, batch_size=BATCH, no_cache=True, **extra)
    seen["tokenizer"] = sorted({r.message for r in run.results})

    model, extra = build()
    if rank == 1:
        extra["tokenizer"] = _unloadable
    seen["fatal"] = _raised(
        lambda: evaluate(model, checklist, batch_size=BATCH, no_cache=True, **extra)
    )
    if rank == 0:
        model, extra = build()
        seen["alone"] = _raised(
            lambda: evaluate(
                model, checklist, no_cache=True, distributed_timeout=TIMEOUT / 4, **extra
            )
        )
    return seen


def _failing(texts: Any) -> Any:
    """A tokenizer that passes evaluate's one-text check, then fails on rank 1's share."""
    if any("shade" in text for text in texts):
        raise ValueError("this tokenizer fails on rank 1")
    return _tokenize(texts)


def _unloadable(texts: Any) -> Any:
    from pytest_vlcheck.errors import ModelLoadError

    if any("shade" in text for text in texts):
        raise ModelLoadError("the text tower's weights are missing on rank 1")
    return _tokenize(texts)


def _tokenize(texts: Any) -> Any:
    """The tiny model's own tokenizer."""
    import open_clip

    from pytest_vlcheck.tiny import CONTEXT_LENGTH

    return open_clip.tokenizer.SimpleTokenizer(context_length=CONTEXT_LENGTH)(texts)


def _raised(call: Callable[[], Any]) -> list[Any]:
    """[exception type, message, seconds] of a call expected to raise."""
    started = time.perf_counter()
    try:
        call()
    except Exception as exc:
        return [type(exc).__name__, str(exc), time.perf_counter() - started]
    return ["nothing", "", time.perf_counter() - started]


def _rows(run: Any) -> str:
    return json.dumps([result.to_json() for result in run.results], sort_keys=True)


def _checksum(model: Any) -> str:
    from pytest_vlcheck.models.live.fingerprint import weights_checksum
    from pytest_vlcheck.run.distributed.wrapped_models import unwrapped

    return weights_checksum(unwrapped(model))


def _builder(family: str, hf_dir: Path) -> Callable[[], tuple[Any, dict]]:
    """A fresh model each call (its runner then starts empty), with its evaluate keywords."""
    if family == "open_clip":
        from pytest_vlcheck.tiny import live_model

        def build_open_clip() -> tuple[Any, dict]:
            model, preprocess, tokenizer = live_model()
            return model, {"preprocess": preprocess, "tokenizer": tokenizer}

        return build_open_clip
    from transformers import AutoProcessor, CLIPModel

    def build_transformers() -> tuple[Any, dict]:
        model = CLIPModel.from_pretrained(hf_dir)
        return model, {"preprocess": AutoProcessor.from_pretrained(hf_dir, backend="pil")}

    return build_transformers


def _wrapped(model: Any, variant: str) -> Any:
    """The model as a training job holds it: plain, in DDP, or its towers sharded (FSDP2:
    the root too, its 0-dim ``logit_scale`` left out; FSDP1: each tower wrapped)."""
    import torch

    towers = (
        ("visual", "transformer") if hasattr(model, "visual") else ("vision_model", "text_model")
    )
    if variant == "ddp":
        return torch.nn.parallel.DistributedDataParallel(model)
    if variant == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for name in towers:
            fully_shard(getattr(model, name))
        return fully_shard(model, ignored_params={model.logit_scale})
    if variant == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel

        for name in towers:
            tower = FullyShardedDataParallel(getattr(model, name), device_id=torch.device("cpu"))
            setattr(model, name, tower)
    return model


def _writes_under(root: Path, writes: list[str]) -> Callable[[str, tuple], None]:
    """An audit hook recording the files renamed into ``root`` (every report file is written
    atomically: a temporary file renamed over it), thumbnails aside."""
    prefix = str(root)

    def hook(event: str, args: tuple) -> None:
        if event == "os.rename" and str(args[1]).startswith(prefix):
            name = str(args[1])[len(prefix) :]
            if "thumbnails" not in name:
                writes.append(name)

    return hook


def train_with_callbacks(rank: int, world: int, work: Path, hf_dir: Path) -> dict[str, Any]:
    """A 4-step DDP training on this rank through each framework's trainer, evaluated every
    2 steps by its callback: the steps of each run, and the lines its logger wrote."""
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world)
    )
    os.environ.update(GROUP_RANK="0", TORCHELASTIC_RUN_ID="vlcheck-test")
    return {"transformers": _hf_training(work, hf_dir), "lightning": _lightning_training(work)}


def _hf_training(work: Path, hf_dir: Path) -> dict[str, Any]:
    import torch
    from transformers import Trainer, TrainingArguments

    from pytest_vlcheck.integrations import VlcheckCallback

    model, extra = _builder("transformers", hf_dir)()
    tokens = extra["preprocess"].tokenizer(["a square"], return_tensors="pt")
    example = {"input_ids": tokens["input_ids"][0], "pixel_values": torch.zeros(3, 32, 32)}

    def collate(rows: list[dict]) -> dict[str, Any]:
        batch = {key: torch.stack([row[key] for row in rows]) for key in example}
        return {**batch, "return_loss": True}

    args = TrainingArguments(
        output_dir=str(work / "hf-out"),
        report_to=[],
        use_cpu=True,
        ddp_backend="gloo",
        max_steps=4,
        per_device_train_batch_size=2,
        save_strategy="no",
        disable_tqdm=True,
    )
    log = work / "hf.jsonl"
    probe = VlcheckCallback(
        work / "checks.yaml", every_n_steps=2, log=f"jsonl:{log}", no_cache=True, **extra
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=[example] * 16,
        data_collator=collate,
        callbacks=[probe],
    )
    trainer.train()
    return {"runs": [[run.step, _rows(run)] for run in probe.runs], "log": _lines(log)}


def _lightning_training(work: Path) -> dict[str, Any]:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import CSVLogger

    from pytest_vlcheck.integrations import VlcheckLightningCallback
    from pytest_vlcheck.tiny import live_model

    clip, preprocess, tokenizer = live_model()

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = clip

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return self.model.logit_scale * batch[0].sum()

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    probe = VlcheckLightningCallback(
        work / "checks.yaml",
        every_n_steps=2,
        preprocess=preprocess,
        tokenizer=tokenizer,
        no_cache=True,
    )
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(16, 1)))
    logger = CSVLogger(str(work / "lightning"), name="", version=0)
    trainer = pl.Trainer(
        max_steps=4,
        callbacks=[probe],
        logger=logger,
        accelerator="cpu",
        devices=int(os.environ["WORLD_SIZE"]),
        strategy="ddp_find_unused_parameters_true",  # the loss uses logit_scale only
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Module(), data)
    csv = work / "lightning" / "version_0" / "metrics.csv"
    return {"runs": [[run.step, _rows(run)] for run in probe.runs], "log": _lines(csv)}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
