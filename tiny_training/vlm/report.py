"""``TRAINING.md`` of ``tiny-vlm``: how to reproduce the weights and what the run measured."""

from __future__ import annotations

import platform
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_training.data import HELD_OUT_PAIRS
from tiny_training.train import loss_table
from tiny_training.vlm.model import IMAGE_SIZE, Sizes
from tiny_training.vlm.pool import KIND_ODDS

if TYPE_CHECKING:
    from tiny_training.vlm.train import RunLog

PROBE_HEADER = "| probe | n | accuracy | chance |"


def render_log(log: RunLog) -> str:
    """The whole ``TRAINING.md``."""
    s = log.settings
    a = log.tower_accuracy
    sizes = Sizes()
    shown = asdict(s)
    shown.pop("out")
    held = ", ".join(f"{c} {sh}" for c, sh in sorted(HELD_OUT_PAIRS))
    odds = ", ".join(f"{k} {v:.0%}" for k, v in KIND_ODDS.items())
    lines = [
        "# `tiny-vlm`: how this folder was trained",
        "",
        "Reproduce it (CPU, about the wall time below on 2 cores):",
        "",
        "```",
        "python -m tiny_training.vlm.train",
        "```",
        "",
        "`--tower-steps 0 --steps 0 --out DIR` writes its random twin (the same init, untrained)"
        " and probes it.",
        "Defaults = this run's settings (flags of the same names override them):",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| `{k.replace('_', '-')}` | {v} |" for k, v in shown.items()],
        "",
        "Architecture (`tiny_training/vlm/model.py`): transformers"
        f" `LlavaForConditionalGeneration`; vision: CLIP ViT {sizes.vision_layers} layers x"
        f" {sizes.vision_width}, {IMAGE_SIZE} px,"
        f" {sizes.patch}-px patches ({sizes.grid**2} image tokens, last layer, no CLS);"
        f" LLaVA's two-layer GELU projector; text: Llama {sizes.text_layers} layers x"
        f" {sizes.text_width}, tied embeddings; word-level tokenizer, {log.vocabulary} tokens.",
        f"Parameters: {log.n_params:,}; weights file {log.weights_bytes / 1e6:.1f} MB (fp16"
        " storage; loaded in fp32 by default).",
        "Prompt: LLaVA-1.5's chat template, `USER: <image>\\n{prompt} ASSISTANT:`, the answer"
        " after one space, then `</s>`; the loss is on the answer's token and `</s>` only.",
        "",
        f"Data: a pool of {s.pool_size} scenes of `tiny_training.data.TrainingSampler` rendered"
        f" once at {IMAGE_SIZE} px (seed {s.seed}); every step asks {s.batch_size} new questions"
        f" of pool scenes (`tiny_training/vlm/questions.py`, the phrasing of"
        f" `checklists_generative/`): the first {s.lookup_steps} steps colour questions only"
        + (f", about the pool's first {s.lookup_scenes} scenes" if s.lookup_scenes else "")
        + " (the lookup of a named shape's patch, which every other kind needs, is learnt"
        " suddenly and only over scenes that repeat), the next"
        f" {s.existence_steps} colour and existence, then every kind; kinds in these odds:"
        f" {odds}. Colour questions are asked of scenes of two or more colours.",
        f"Colour+shape pairs never drawn (as for `tiny`): {held}.",
        f"Scenes of the bundled suites (`checklists/`, `checklists_generative/`) excluded:"
        f" {log.excluded_scenes} distinct scenes;"
        f" draws that hit one and were drawn again: {log.rejected_draws}.",
        "",
        f"Wall time: {log.wall_seconds:.0f} s in all, {log.train_seconds:.0f} s to the end of"
        f" training ({s.steps / max(log.train_seconds, 1e-9):.2f} steps/s), torch threads"
        f" {s.threads}, {platform.machine()} CPU, shared with other work.",
        "",
        "## Stage 1: the vision tower alone (`tiny_training/vlm/pretrain.py`)",
        "",
        f"{s.tower_steps} Adam steps (batch {s.tower_batch_size}, lr {s.tower_lr} after a"
        f" {s.tower_warmup}-step warm-up, cosine decay to a tenth; a random half of every batch"
        " mirrored left-right) of the tower and linear heads on the pool scenes' truth: per"
        " scene the colours, the colour-shape pairs and each shape's count (at least 1..4),"
        " from the mean patch feature; per patch the colours and shapes of the objects centred"
        f" in it (binary cross-entropy, positives weighted {s.tower_pos_weight:g}) and the shape"
        " centred there as one choice among the shapes and none (cross-entropy, none weighted"
        f" 1/{s.tower_pos_weight:g})"
        + (
            "; and `tiny`'s ResNet feature maps per patch (third and fourth stage, standardised;"
            " mean squared error of a linear map, `tiny_training/vlm/teacher.py`)"
            if s.tower_teacher
            else ""
        )
        + ". Then the tower is frozen.",
        f"Held-out scenes ({_percent(a.colors)} colour sets exact, {_percent(a.pairs)} pair sets"
        f" exact, {_percent(a.counts)} shape counts right, {_percent(a.patches)} of occupied"
        f" patches all right, {_percent(a.patch_colors)} of their colours right,"
        f" {_percent(a.patch_shapes)} of their shapes right).",
        "",
        "| steps | mean loss |",
        "|---|---|",
        *[f"| {a}-{b} | {v:.3f} |" for a, b, v in loss_table(log.tower_losses)],
        "",
        "## Stage 2 loss (projector and decoder; answer tokens' cross-entropy; window means)",
        "",
        "| steps | mean loss |",
        "|---|---|",
        *[f"| {a}-{b} | {v:.3f} |" for a, b, v in loss_table(log.losses)],
    ]
    if not log.losses:
        lines.append("| (no steps: seed-initialised weights) | |")
    lines += [
        "",
        "## Held-out probes (the saved fp16 weights)",
        "",
        f"New scenes (seed {s.seed + 1}) drawn at 224 px and resized by the model's image"
        " processor, as the checklists' scenes are; a probe is right when the greedy answer's"
        " first token is the answer (`tiny_training/vlm/probes.py`).",
        "",
        PROBE_HEADER,
        "|---|---|---|---|",
        *[f"| {r.kind} | {r.n} | {r.accuracy:.1%} | {r.chance:.1%} |" for r in log.results],
    ]
    return "\n".join(lines) + "\n"


def _percent(x: float) -> str:
    return f"{x:.1%}"


def probe_table(path: Path) -> dict[str, float]:
    """The probe accuracies a ``TRAINING.md`` states, by kind (fractions)."""
    rows = path.read_text(encoding="utf-8").split(PROBE_HEADER, 1)[1].strip().splitlines()[1:]
    out = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out[cells[0]] = float(cells[2].rstrip("%")) / 100
    return out
