"""In-loop evaluation of the bundled suite on a live model, against the time inside it.

    python benchmarks/in_loop.py                      # the whole bundled suite, tiny, CPU
    python benchmarks/in_loop.py --arch random-224    # issue 36's 224-px random open_clip
    python benchmarks/in_loop.py --arch ViT-B-32 --device cuda --select attribute/color

A training loop calls ``pytest_vlcheck.evaluate(model, ...)`` every N steps on the model it
trains. This times, in one process, a live open_clip model object (train mode, as a loop
holds it): ``tiny`` with its shipped weights, ``random-224`` (a randomly initialised 224-px
ViT, 2 layers of width 128: the configuration issue 36 sets its goal on), any open_clip
registry name or a model-config JSON (random weights):

- ``first call``: ``evaluate`` from nothing (scenes rendered, images preprocessed, every input
  encoded);
- ``unchanged``: the next call with the weights unchanged (nothing is encoded again);
- ``after update``: a call after an in-place weight update (everything is encoded again).

Each call is repeated ``--repeats`` times (a fresh model for each first call) and the medians
are printed, with the seconds spent inside the model's own ``encode_image`` /
``encode_text`` during that call (timers around them, synchronised on CUDA) and the ratio of
the call to that time: issue 36's goal is an after-update call within 1.3x of it. The pass
rates of the first and the unchanged call must be equal (checked).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import types
from pathlib import Path
from typing import Any

RANDOM_224 = {
    "embed_dim": 128,
    "vision_cfg": {
        "image_size": 224,
        "layers": 2,
        "width": 128,
        "patch_size": 32,
        "head_width": 32,
    },
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 128, "heads": 4, "layers": 2},
}


def _model(arch: str, device: str) -> tuple[Any, Any, Any]:
    """A live model (train mode, on ``device``), its eval preprocess and tokenizer."""
    import open_clip
    import torch

    if arch == "tiny":
        from pytest_vlcheck.tiny import live_model

        model, preprocess, tokenizer = live_model()
        return model.to(device), preprocess, tokenizer
    torch.manual_seed(0)
    if arch == "random-224" or Path(arch).is_file():
        config = RANDOM_224 if arch == "random-224" else json.loads(Path(arch).read_text())
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "vlcheck-bench.json")
            path.write_text(json.dumps(config))
            open_clip.add_model_config(path)
        arch = "vlcheck-bench"
    model, _, preprocess = open_clip.create_model_and_transforms(arch, device=device)
    model.train()
    return model, preprocess, open_clip.get_tokenizer(arch)


class _InsideTimer:
    """Seconds spent inside the model's ``encode_image`` / ``encode_text``: bound-method
    instance attributes wrapping the class's methods (the model's repr, weights and class stay
    as they are). Bound to the model, a deep copy of it (``precision=`` below fp32 runs on a
    cast copy) is timed too and runs its own weights, not the caller's."""

    def __init__(self, model: Any, device: str) -> None:
        import torch

        self.seconds = 0.0
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        for name in ("encode_image", "encode_text"):

            def timed(owner: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
                sync()
                started = time.perf_counter()
                out = getattr(type(owner), _name)(owner, *args, **kwargs)
                sync()
                self.seconds += time.perf_counter() - started
                return out

            setattr(model, name, types.MethodType(timed, model))


def _call(model: Any, preprocess: Any, tokenizer: Any, timer: _InsideTimer, args: Any) -> tuple:
    from pytest_vlcheck import evaluate

    timer.seconds = 0.0
    started = time.perf_counter()
    run = evaluate(
        model,
        [],
        bundled=True,
        select=args.select,
        preprocess=preprocess,
        tokenizer=tokenizer,
        no_cache=True,
        precision=args.precision,
        **({"image_memory": args.image_memory} if args.image_memory else {}),
    )
    return time.perf_counter() - started, timer.seconds, run


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", action="append", help="test ids or capability prefixes")
    parser.add_argument("--arch", default="tiny", help="tiny, random-224, open_clip name, JSON")
    parser.add_argument("--device", default="cpu", help="where the model lives (cpu, cuda)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--image-memory", help="image_memory= (default: the option's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows: dict[str, list[tuple[float, float]]] = {
        "first call": [],
        "unchanged": [],
        "after update": [],
    }
    counts = ""
    for _ in range(args.repeats):
        model, preprocess, tokenizer = _model(args.arch, args.device)
        timer = _InsideTimer(model, args.device)
        first = _call(model, preprocess, tokenizer, timer, args)
        unchanged = _call(model, preprocess, tokenizer, timer, args)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(1.001)
        updated = _call(model, preprocess, tokenizer, timer, args)
        for label, (seconds, inside, _) in zip(rows, (first, unchanged, updated), strict=True):
            rows[label].append((seconds, inside))
        errors = [
            r.message
            for _, _, run in (first, unchanged, updated)
            for r in run.results
            if r.status == "error"
        ]
        assert not errors, f"the timed calls errored: {errors[0]}"
        rates = [[r.pass_rate for r in run.results] for run in (first[2], unchanged[2])]
        assert rates[0] == rates[1], "an unchanged model measured differently"
        stats = updated[2].stats["model"]
        counts = f"{stats.images_encoded} images, {stats.texts_encoded} texts encoded per call"
    print(f"{args.arch} on {args.device} ({args.precision}), {counts}; medians of {args.repeats}")
    for label, values in rows.items():
        seconds = statistics.median(v[0] for v in values)
        inside = statistics.median(v[1] for v in values)
        ratio = f"{seconds / inside:6.2f}x inside" if inside > 0 else "   (nothing encoded)"
        print(f"{label:14}{seconds:8.2f} s   inside the model {inside:6.2f} s  {ratio}")


if __name__ == "__main__":
    main()
