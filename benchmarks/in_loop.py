"""In-loop evaluation of the bundled suite on a live model, against its forward passes alone.

    python benchmarks/in_loop.py                      # the whole bundled suite, tiny, CPU
    python benchmarks/in_loop.py --select attribute/color --threads 2

A training loop calls ``pytest_vlcheck.evaluate(model, ...)`` every N steps on the model it
trains. This times, in one process, on the shipped ``tiny`` model held as a live open_clip
model object (train mode, as a loop holds it):

- ``forward``: the model's forward passes alone, on images decoded, rendered and
  preprocessed beforehand (not timed), every unique image and text once, in batches of 64;
- ``first call``: ``evaluate`` from nothing (scenes rendered, images preprocessed, every input
  encoded);
- ``unchanged``: the next call with the weights unchanged (nothing is encoded again);
- ``after update``: a call after an in-place weight update (everything is encoded again).

Each line prints seconds and the ratio to ``forward``; the pass rates of the first and the
unchanged call must be equal (checked).
"""

from __future__ import annotations

import argparse
import time


def _inputs(select: list[str] | None):
    """Every unique image (decoded, rendered) and text the selected bundled tests score."""
    from pytest_vlcheck.checklist.bundled import bundled_checklists_dir
    from pytest_vlcheck.images.loading import ImageLoader
    from pytest_vlcheck.run.checklists import checklist_files, load_tests, selected
    from pytest_vlcheck.tasks import get_task

    tests = selected(load_tests(checklist_files([bundled_checklists_dir()]), None), select)
    refs, texts = {}, {}
    for test in tests:
        for example in test.examples:
            example_refs, example_texts = get_task(test.task).grid(example)
            refs.update({ref.key: ref for ref in example_refs})
            texts.update(dict.fromkeys(example_texts))
    loader = ImageLoader()
    return [loader(ref) for ref in refs.values()], list(texts)


def _forward_seconds(scorer, images, texts, batch: int = 64) -> float:
    """The forward passes alone, on preprocessed images."""
    prepared = [scorer.preprocess_image(image) for image in images]
    started = time.perf_counter()
    for start in range(0, len(prepared), batch):
        scorer.encode_preprocessed(prepared[start : start + batch])
    for start in range(0, len(texts), batch):
        scorer.encode_texts(texts[start : start + batch])
    return time.perf_counter() - started


def main() -> None:
    import torch

    from pytest_vlcheck import evaluate
    from pytest_vlcheck.models.live import live_scorer
    from pytest_vlcheck.models.protocol import ModelOptions
    from pytest_vlcheck.tiny import live_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", action="append", help="test ids or capability prefixes")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, preprocess, tokenizer = live_model()
    images, texts = _inputs(args.select)
    options = ModelOptions(device="cpu")
    scorer = live_scorer(model, preprocess=preprocess, tokenizer=tokenizer, options=options)
    forward = _forward_seconds(scorer, images, texts)

    def call(label: str) -> object:
        started = time.perf_counter()
        run = evaluate(
            model,
            [],
            bundled=True,
            select=args.select,
            preprocess=preprocess,
            tokenizer=tokenizer,
            no_cache=True,
            device="cpu",
        )
        seconds = time.perf_counter() - started
        stats = run.stats["model"]
        print(
            f"{label:14}{seconds:8.2f} s  {seconds / forward:6.2f}x forward  "
            f"({stats.images_encoded} images, {stats.texts_encoded} texts encoded)"
        )
        return run

    print(f"{len(images)} unique images, {len(texts)} unique texts, tiny on the CPU")
    print(f"{'forward':14}{forward:8.2f} s  {1:6.2f}x forward")
    first = call("first call")
    unchanged = call("unchanged")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(1.001)
    call("after update")
    rates = [[r.pass_rate for r in run.results] for run in (first, unchanged)]
    assert rates[0] == rates[1], "an unchanged model measured differently"


if __name__ == "__main__":
    main()
