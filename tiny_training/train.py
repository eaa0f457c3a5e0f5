"""Train the embedded ``tiny`` CLIP on freshly generated scenes, on the CPU.

    python -m tiny_training.train            # the shipped weights: defaults below
    python -m tiny_training.train --steps 2 --batch-size 8 --out /tmp/tiny-smoke

Defaults (the run that made ``tiny.safetensors``): ``--steps 1800 --batch-size 128
--lr 1e-3 --warmup 100 --weight-decay 0.1 --hard-weight 1.0 --seed 0 --threads 2
--bn-batches 20 --eval-size 120``; the architecture is ``tiny.json`` (open_clip CLIP with
a small ModifiedResNet image tower at 96 px, a 3-layer text transformer of width 128 with
32 tokens, 128-d embeddings). About 20 minutes on 2 CPU cores.

Every step draws a new batch from :class:`~tiny_training.data.TrainingSampler`,
renders it with the checklists' scene renderer at the model's input size, normalises it with
open_clip's eval transform, and takes one AdamW step on the symmetric InfoNCE (CLIP) loss.
Captions repeat within a batch (``a red circle`` fits many scenes), so the targets spread
evenly over every item with the same caption instead of calling identical captions
negatives. Each image also meets its own hard negative, its caption with one shape word
swapped for an absent shape, in the softmax (NegCLIP style) and in a two-way term weighted
by ``--hard-weight``: without it a model this small learns colours and hardly any shapes.
The learning rate warms up linearly, then follows a cosine to zero. After the last step the
image tower's BatchNorm statistics are recomputed over ``--bn-batches`` fresh batches.

The run writes, atomically, into ``--out`` (default: ``pytest_vlcheck/tiny``, the shipped model):
``tiny.safetensors`` (fp16 storage; open_clip copies it into fp32 parameters on load) and
``TRAINING.md`` (settings, loss curve, wall time, zero-shot accuracy on probes).
``--steps 0`` writes the seed-initialised twin, a chance-level reference.

``--eval-every N`` evaluates the bundled checklists (or ``--eval-checklists``) with
``pytest_vlcheck.evaluate`` every N steps and after the last, on a BatchNorm-recalibrated
twin (``tiny_training.in_loop``), logs them to ``--log`` specs (``tensorboard:DIR``,
``jsonl:FILE``, ...) and adds the capability curves to ``TRAINING.md``. The weights are the
same, bit for bit, with or without it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.atomic import atomic_path, atomic_write_text
from pytest_vlcheck.tiny import TINY_CONFIG
from tiny_training.data import HELD_OUT_PAIRS, Sample, TrainingSampler, scene_keys
from tiny_training.in_loop import CapabilityCurve, EvalSettings, InLoopProbe
from tiny_training.probes import Probe, probe_set

if TYPE_CHECKING:
    import torch

WEIGHTS_NAME = "tiny.safetensors"
LOG_NAME = "TRAINING.md"


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on; printed into ``TRAINING.md`` and the weights' metadata."""

    steps: int = 1800
    batch_size: int = 128
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.1
    hard_weight: float = 1.0
    seed: int = 0
    threads: int = 2
    eval_size: int = 120
    bn_batches: int = 20
    log_every: int = 50
    config: str = str(TINY_CONFIG)
    out: str = str(TINY_CONFIG.parent)


def parse_args(argv: Sequence[str] | None = None) -> Settings:
    """Command-line flags -> :class:`Settings` (defaults are the shipped run's)."""
    p = _parser()
    a = p.parse_args(argv)
    s = Settings(
        steps=a.steps,
        batch_size=a.batch_size,
        lr=a.lr,
        warmup=a.warmup,
        weight_decay=a.weight_decay,
        hard_weight=a.hard_weight,
        seed=a.seed,
        threads=a.threads,
        eval_size=a.eval_size,
        bn_batches=a.bn_batches,
        log_every=a.log_every,
        config=a.config,
        out=a.out,
    )
    if min(s.steps, s.eval_size, s.bn_batches) < 0 or s.batch_size < 2 or s.threads < 1:
        p.error("need --steps, --eval-size, --bn-batches >= 0, --batch-size >= 2, --threads >= 1")
    if s.log_every < 1:
        p.error("need --log-every >= 1")
    return s


def parse_eval_args(argv: Sequence[str] | None = None) -> EvalSettings:
    """The in-loop evaluation flags -> :class:`EvalSettings` (off by default)."""
    p = _parser()
    a = p.parse_args(argv)
    if a.eval_every < 0:
        p.error("need --eval-every >= 0 (0: no in-loop evaluation)")
    return EvalSettings(a.eval_every, tuple(a.eval_checklists), tuple(a.eval_select), tuple(a.log))


def _parser() -> argparse.ArgumentParser:
    d = Settings()
    p = argparse.ArgumentParser(
        prog="python -m tiny_training.train",
        description="Train the embedded tiny CLIP on synthetic scenes (CPU).",
    )
    p.add_argument("--steps", type=int, default=d.steps, help="optimizer steps (0: init only)")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=d.warmup, help="linear warm-up steps")
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument(
        "--hard-weight", type=float, default=d.hard_weight, help="weight of the hard-negative term"
    )
    p.add_argument("--seed", type=int, default=d.seed, help="seeds init and data")
    p.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads")
    p.add_argument(
        "--bn-batches", type=int, default=d.bn_batches, help="batches for BatchNorm statistics"
    )
    p.add_argument("--eval-size", type=int, default=d.eval_size, help="probes per kind")
    p.add_argument("--log-every", type=int, default=d.log_every)
    p.add_argument("--config", default=d.config, help="open_clip model-config JSON")
    p.add_argument("--out", default=d.out, help="folder for tiny.safetensors and TRAINING.md")
    p.add_argument(
        "--eval-every", type=int, default=0, help="evaluate checklists every N steps (0: never)"
    )
    p.add_argument(
        "--eval-checklists",
        nargs="+",
        default=[],
        metavar="PATH",
        help="checklist files or folders to evaluate (default: the bundled suite)",
    )
    p.add_argument(
        "--eval-select",
        nargs="+",
        default=[],
        metavar="ID",
        help="evaluate only these test ids or capability prefixes",
    )
    p.add_argument(
        "--log",
        action="append",
        default=[],
        metavar="SPEC",
        help="where evaluations go (tensorboard:DIR, jsonl:FILE, wandb, mlflow); repeatable",
    )
    return p


def lr_at(step: int, s: Settings) -> float:
    """Linear warm-up to ``s.lr`` over ``s.warmup`` steps, then a cosine down to zero."""
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    span = max(1, s.steps - s.warmup)
    return 0.5 * s.lr * (1.0 + math.cos(math.pi * min(1.0, (step - s.warmup) / span)))


def describe_config(config: str | Path) -> str:
    """One line about the architecture in an open_clip model config."""
    cfg = json.loads(Path(config).read_text(encoding="utf-8"))
    v, t = cfg["vision_cfg"], cfg["text_cfg"]
    if isinstance(v.get("layers"), list):
        vision = f"ResNet (open_clip ModifiedResNet) {v['layers']} blocks, width {v['width']}"
    else:
        vision = f"ViT patch {v['patch_size']}, {v['layers']} layers x {v['width']}"
    return (
        f"open_clip CLIP, {vision}, {v['image_size']} px input; text transformer "
        f"{t['layers']} layers x {t['width']}, {t['context_length']} tokens, open_clip's BPE "
        f"vocabulary ({t['vocab_size']}); embeddings {cfg['embed_dim']}-d"
    )


def build_model(config: str | Path) -> tuple[Any, Callable[[Any], Any], Any]:
    """The model, its eval image transform and its tokenizer, from the open_clip config.

    The config is registered under its file stem, as a user's config JSON would be, so the
    tokenizer takes ``context_length`` from the config.
    """
    import open_clip

    path = Path(config).resolve()
    open_clip.add_model_config(path)
    model, _, preprocess = open_clip.create_model_and_transforms(path.stem, pretrained=None)
    tokenizer = open_clip.get_tokenizer(path.stem)
    return model, preprocess, tokenizer


class Batches:
    """Renders batches in a background thread so drawing overlaps the torch step.

    The thread consumes the sampler in order, so the batch sequence depends only on the seed.
    """

    def __init__(
        self,
        sampler: TrainingSampler,
        batch_size: int,
        count: int,
        to_pixels: Callable[[Sequence[dict[str, Any]]], torch.Tensor],
    ) -> None:
        self._queue: queue.Queue[tuple[list[Sample], torch.Tensor] | BaseException] = queue.Queue(
            maxsize=3
        )
        self._stop = threading.Event()
        self._count = count

        def work() -> None:
            try:
                for _ in range(count):
                    if self._stop.is_set():
                        return
                    samples = sampler.batch(batch_size)
                    self._queue.put((samples, to_pixels([x.scene for x in samples])))
            except BaseException as exc:  # handed to the consumer, raised there
                self._queue.put(exc)

        self._thread = threading.Thread(target=work, name="tiny-render", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[tuple[list[Sample], torch.Tensor]]:
        for _ in range(self._count):
            item = self._queue.get()
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop the worker; drain the queue so a blocked ``put`` lets it see the stop."""
        self._stop.set()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)


def pixel_fn(preprocess: Callable[[Any], Any]) -> Callable[[Sequence[dict[str, Any]]], Any]:
    """Scene specs -> a normalised image batch, through the renderer and the eval transform."""
    import torch

    from pytest_vlcheck.images.scenes import render_scene

    def to_pixels(scenes: Sequence[dict[str, Any]]) -> torch.Tensor:
        return torch.stack([preprocess(render_scene(sc).convert("RGB")) for sc in scenes])

    return to_pixels


class TokenCache:
    """Tokenizes each distinct caption once (the vocabulary of captions is small)."""

    def __init__(self, tokenizer: Callable[[list[str]], Any]) -> None:
        self._tokenizer = tokenizer
        self._rows: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        import torch

        new = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if new:
            for t, row in zip(new, self._tokenizer(new), strict=True):
                self._rows[t] = row
        return torch.stack([self._rows[t] for t in texts])


def clip_loss(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    logit_scale: torch.Tensor,
    captions: Sequence[str],
    negative_features: torch.Tensor | None = None,
    negatives: Sequence[str] = (),
    hard_weight: float = 0.0,
) -> torch.Tensor:
    """Symmetric InfoNCE where every item sharing the caption counts as a positive.

    Both directions use the same target: uniform over the items whose caption equals
    item i's (with all captions distinct this is the usual identity target). With
    ``negative_features``, every image also has the batch's hard-negative captions among
    its candidates (image-to-text direction only, as in NegCLIP), except one that happens
    to equal the image's own caption. ``hard_weight`` adds that much of a two-way
    cross-entropy between each image's caption and its own hard negative (item i's
    negative is a caption false of image i by construction).
    """
    import torch

    ids = {c: k for k, c in enumerate(dict.fromkeys(captions))}
    cid = torch.tensor([ids[c] for c in captions])
    same = (cid[:, None] == cid[None, :]).float()
    target = same / same.sum(dim=1, keepdim=True)
    logits = logit_scale * image_features @ text_features.T
    loss_t = torch.sum(-target * torch.log_softmax(logits.T, dim=1), dim=1).mean()
    if negative_features is not None:
        extra = logit_scale * image_features @ negative_features.T
        clash = torch.tensor([[n == c for n in negatives] for c in captions])
        # A large finite value, not -inf: 0 * log_softmax(-inf) would be nan.
        extra = extra.masked_fill(clash, -1e4)
        logits = torch.cat([logits, extra], dim=1)
        target = torch.cat([target, torch.zeros_like(extra)], dim=1)
    loss_i = torch.sum(-target * torch.log_softmax(logits, dim=1), dim=1).mean()
    loss = (loss_i + loss_t) / 2
    if negative_features is not None and hard_weight:
        own = torch.sum(image_features * text_features, dim=1)
        wrong = torch.sum(image_features * negative_features, dim=1)
        loss = loss + hard_weight * torch.nn.functional.softplus(logit_scale * (wrong - own)).mean()
    return loss


def param_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """Decay only weight matrices; gains, biases, embeddings and the temperature go free."""
    decay, free = [], []
    for name, p in model.named_parameters():
        no_decay = p.ndim < 2 or "embedding" in name or "logit_scale" in name
        (free if no_decay else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": free, "weight_decay": 0.0},
    ]


@dataclass(frozen=True)
class ProbeResult:
    """Zero-shot accuracy on one kind of probe."""

    kind: str
    n: int
    correct: int
    chance: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


def evaluate(
    model: Any,
    to_pixels: Callable[[Sequence[dict[str, Any]]], torch.Tensor],
    tokens: TokenCache,
    probes: Sequence[Probe],
) -> list[ProbeResult]:
    """Caption choice on probes: correct when the true caption strictly beats every other."""
    import torch

    was_training = model.training
    model.eval()
    by_kind: dict[str, list[int]] = {}
    chance: dict[str, list[float]] = {}
    with torch.no_grad():
        for start in range(0, len(probes), 64):
            chunk = probes[start : start + 64]
            img = model.encode_image(to_pixels([p.scene for p in chunk]), normalize=True)
            for k, probe in enumerate(chunk):
                texts = [probe.caption, *probe.negatives]
                txt = model.encode_text(tokens(texts), normalize=True)
                sims = (img[k : k + 1] @ txt.T)[0]
                ok = bool(sims[0] > sims[1:].max())
                by_kind.setdefault(probe.kind, []).append(int(ok))
                chance.setdefault(probe.kind, []).append(1.0 / len(texts))
    model.train(was_training)
    return [
        ProbeResult(kind, len(v), sum(v), sum(chance[kind]) / len(v)) for kind, v in by_kind.items()
    ]


def recalibrate_batchnorm(model: Any, batches: Iterable[tuple[Any, torch.Tensor]]) -> int:
    """Recompute every BatchNorm's running statistics with the final weights ("precise BN").

    The running averages gathered during training mix statistics of many older weights;
    here they were far enough off that eval-mode scores fell to chance on shapes while
    train-mode scores were right. Plain averages over fresh batches fix that. Returns the
    number of BatchNorm layers (0 for a model without any).
    """
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return 0
    momenta = [bn.momentum for bn in norms]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average
    model.train()
    with torch.no_grad():
        for _, images in batches:
            model.encode_image(images)
    for bn, momentum in zip(norms, momenta, strict=True):
        bn.momentum = momentum
    model.eval()
    return len(norms)


def bundled_scenes(folder: str = "checklists") -> list[dict[str, Any]]:
    """Every scene a bundled suite's checklists use (generators expanded), as spec mappings
    (``folder``: ``checklists``, or ``checklists_generative``)."""
    from pytest_vlcheck.checklist.bundled import bundled_checklists
    from pytest_vlcheck.checklist.loader import load_checklist

    scenes = []
    for path in bundled_checklists(folder):
        for test in load_checklist(path).tests:
            for example in test.examples:
                refs = [getattr(example, "image", None)]
                refs += list(getattr(example, "images", ()) or ())
                refs += list(getattr(example, "distractors", ()) or ())
                scenes += [
                    json.loads(r.location) for r in refs if r is not None and r.kind == "scene"
                ]
    return scenes


def save_weights(model: Any, path: Path, metadata: dict[str, str]) -> None:
    """Write the state dict as fp16 safetensors, atomically."""
    import torch
    from safetensors.torch import save_file

    state = {
        k: (v.detach().to(torch.float16) if v.is_floating_point() else v.detach()).contiguous()
        for k, v in model.state_dict().items()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temp:
        save_file(state, str(temp), metadata=metadata)


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


@dataclass
class RunLog:
    """What ``TRAINING.md`` reports about a run."""

    settings: Settings
    losses: list[float]
    wall_seconds: float
    train_seconds: float
    n_params: int
    weights_bytes: int
    results: list[ProbeResult]
    excluded_scenes: int = 0
    rejected_draws: int = 0
    curve: CapabilityCurve | None = None
    eval_every: int = 0


def loss_table(losses: Sequence[float], rows: int = 12) -> list[tuple[int, int, float]]:
    """The loss curve as (first step, last step, mean loss) over about ``rows`` windows."""
    if not losses:
        return []
    width = max(1, math.ceil(len(losses) / rows))
    out = []
    for start in range(0, len(losses), width):
        window = losses[start : start + width]
        out.append((start + 1, start + len(window), sum(window) / len(window)))
    return out


def render_log(log: RunLog) -> str:
    """``TRAINING.md``: how to reproduce the weights, and what the run measured."""
    s = log.settings
    held = ", ".join(f"{c} {sh}" for c, sh in sorted(HELD_OUT_PAIRS))
    lines = [
        "# The embedded `tiny` model: how it was trained",
        "",
        "Reproduce the shipped weights (CPU, about the wall time below on 2 cores):",
        "",
        "```",
        "python -m tiny_training.train",
        "```",
        "",
        "Defaults = this run's settings (flags of the same names override them):",
        "",
        "| setting | value |",
        "|---|---|",
    ]
    shown = asdict(s)
    shown["config"] = Path(s.config).name
    shown.pop("out")
    lines += [f"| `{k}` | {v} |" for k, v in shown.items()]
    lines += [
        "",
        f"Architecture: `{Path(s.config).name}`: {describe_config(s.config)}.",
        f"Parameters: {log.n_params:,}; weights file {log.weights_bytes / 1e6:.1f} MB "
        "(fp16 storage; open_clip copies it into fp32 parameters on load).",
        "",
        "Data: every batch is new scenes from `tiny_training.data.TrainingSampler` "
        "(captions in the checklists' phrasing), drawn by "
        "`pytest_vlcheck.images.scenes.render_scene` at the model's input size and "
        "normalised by open_clip's eval transform (the checklists' 224-px scenes are "
        "resized to that size by the same transform; the two look alike, see "
        "`tests/models/test_tiny.py`).",
        f"Colour+shape pairs never drawn in training (held out): {held}.",
        f"Scenes of the bundled checklists excluded from training: {log.excluded_scenes} "
        f"distinct scenes (compared up to resolution by `scene_key`); draws that hit one "
        f"and were drawn again: {log.rejected_draws}.",
        "",
        f"Wall time: {log.wall_seconds:.0f} s in all, {log.train_seconds:.0f} s training "
        f"({s.steps / max(log.train_seconds, 1e-9):.2f} steps/s), "
        f"torch threads {s.threads}, {platform.machine()} CPU.",
        "",
        "## Loss (InfoNCE with hard negatives + hard-weight x two-way term; window means)",
        "",
        "| steps | mean loss |",
        "|---|---|",
    ]
    lines += [f"| {a}-{b} | {v:.3f} |" for a, b, v in loss_table(log.losses)]
    if not log.losses:
        lines.append("| (no steps: seed-initialised weights) | |")
    lines += [
        "",
        "## Zero-shot caption choice on new scenes (after training)",
        "",
        "Probes (`tiny_training.probes`) are drawn at 224 px like the checklists' "
        "scenes; all but the `/trained` controls contain a held-out colour+shape pair. A probe "
        "is right when the true caption strictly outscores every alternative.",
        "",
        "| probe | n | accuracy | chance |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r.kind} | {r.n} | {r.accuracy:.1%} | {r.chance:.1%} |" for r in log.results]
    if log.curve is not None and log.curve.steps:
        lines += [
            "",
            "## Capability curves (the checklists' pass rates during training)",
            "",
            f"Measured with `--eval-every {log.eval_every}` (the weights are the same with or "
            "without it): `pytest_vlcheck.evaluate` on a twin of the model whose BatchNorm "
            "statistics were recomputed as after the last step, so each column is the model "
            "as it would ship at that step (`tiny_training/in_loop.py`).",
            "",
            *log.curve.markdown(),
        ]
    return "\n".join(lines) + "\n"


def _recalibrate(
    model: Any,
    s: Settings,
    excluded: set,
    canvas: int,
    to_pixels: Callable,
    echo: Callable[[str], None],
) -> None:
    """Recompute BatchNorm statistics over fresh batches (the trained running stats lag)."""
    calibration = Batches(
        TrainingSampler(s.seed + 2, exclude=excluded, canvas=canvas),
        s.batch_size,
        s.bn_batches,
        to_pixels,
    )
    try:
        if recalibrate_batchnorm(model, calibration):
            echo(f"BatchNorm statistics recomputed over {s.bn_batches} fresh batches")
    finally:
        calibration.close()


def train(
    s: Settings, echo: Callable[[str], None] = print, evaluation: EvalSettings | None = None
) -> RunLog:
    """Run the whole recipe and write the weights and the log into ``s.out``; with
    ``evaluation.every``, evaluate checklists along the way (``tiny_training.in_loop``)."""
    import torch

    wall0 = time.perf_counter()
    torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed)
    model, preprocess, tokenizer = build_model(s.config)
    model.train()
    to_pixels = pixel_fn(preprocess)
    tokens = TokenCache(tokenizer)
    opt = torch.optim.AdamW(
        param_groups(model, s.weight_decay), lr=s.lr, betas=(0.9, 0.98), eps=1e-6
    )
    n_params = sum(p.numel() for p in model.parameters())
    echo(f"tiny: {n_params:,} parameters, {s.steps} steps of {s.batch_size}")

    excluded = scene_keys(bundled_scenes())
    echo(f"excluding the {len(excluded)} distinct scenes of the bundled checklists")
    canvas = int(json.loads(Path(s.config).read_text(encoding="utf-8"))["vision_cfg"]["image_size"])
    sampler = TrainingSampler(s.seed, exclude=excluded, canvas=canvas)
    losses: list[float] = []
    evaluation = evaluation or EvalSettings()
    probe = InLoopProbe(
        model,
        evaluation,
        preprocess=preprocess,
        tokenizer=tokenizer,
        recalibrate=lambda twin: _recalibrate(twin, s, excluded, canvas, to_pixels, _quiet),
    )
    eval_seconds = 0.0
    if evaluation.every:
        echo(probe(0, model))  # the curve's start, and every evaluation mistake before training
    batches = Batches(sampler, s.batch_size, s.steps, to_pixels)
    t0 = time.perf_counter()
    try:
        for step, (samples, images) in enumerate(batches):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, s)
            captions = [x.caption for x in samples]
            negatives = [x.negative for x in samples]
            image_f, text_f, scale = model(images, tokens(captions + negatives))
            n = len(captions)
            loss = clip_loss(
                image_f, text_f[:n], scale, captions, text_f[n:], negatives, s.hard_weight
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            losses.append(loss.item())
            if (step + 1) % s.log_every == 0 or step + 1 == s.steps:
                rate = (step + 1) / (time.perf_counter() - t0)
                recent = losses[-s.log_every :]
                echo(
                    f"step {step + 1}/{s.steps} loss {sum(recent) / len(recent):.3f} "
                    f"lr {lr_at(step, s):.2e} {rate:.2f} steps/s"
                )
            if probe.due(step + 1, s.steps):
                started = time.perf_counter()
                echo(probe(step + 1, model))
                eval_seconds += time.perf_counter() - started
    finally:
        batches.close()
    train_seconds = time.perf_counter() - t0 - eval_seconds
    if s.steps:
        _recalibrate(model, s, excluded, canvas, to_pixels, echo)

    out = Path(s.out)
    weights = out / WEIGHTS_NAME
    # The settings that make the weights: not --out, so the bytes do not depend on the folder.
    recipe = {k: v for k, v in asdict(s).items() if k != "out"} | {"config": Path(s.config).name}
    meta = {"vlcheck_tiny": json.dumps(recipe)}
    save_weights(model, weights, meta)
    # Evaluate what was saved: reload the fp16 weights into the fp32 model first.
    from open_clip.factory import load_checkpoint

    load_checkpoint(model, str(weights))
    results = evaluate(model, to_pixels, tokens, probe_set(s.seed + 1, s.eval_size))
    for r in results:
        echo(f"probe {r.kind}: {r.accuracy:.1%} of {r.n} (chance {r.chance:.1%})")
    log = RunLog(
        s,
        losses,
        time.perf_counter() - wall0,
        train_seconds,
        n_params,
        weights.stat().st_size,
        results,
        len(excluded),
        sampler.rejected,
        probe.curve,
        evaluation.every,
    )
    write_text(out / LOG_NAME, render_log(log))
    echo(f"wrote {weights} and {out / LOG_NAME} in {log.wall_seconds:.0f} s")
    return log


def _quiet(_: str) -> None:
    """Recalibrating the in-loop twin says nothing (the final recalibration does)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m tiny_training.train``."""
    from pytest_vlcheck.errors import VlcheckUserError

    settings, evaluation = parse_args(argv), parse_eval_args(argv)
    try:
        train(settings, echo=lambda m: print(m, flush=True), evaluation=evaluation)
    except VlcheckUserError as exc:
        print(f"tiny_training.train: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
