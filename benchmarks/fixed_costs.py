"""The fixed costs around the model, as whole processes: a bare script vs pytest with the plugin.

    python benchmarks/fixed_costs.py                               # SugarCrepe-sized, ~5 min
    python benchmarks/fixed_costs.py --examples 300 --images 60 --repeats 1   # a smoke run

Data: SugarCrepe's shape (seven caption tests, one per set, 7,511 examples over 1,560 COCO-named
640x480 JPEGs by default), each set's examples in a JSON Lines file (``examples: SET.jsonl``)
so that YAML parsing does not mask the rest. The model is a random open_clip model (``vit2``:
embed_dim 64, a 2-layer ViT of width 128 with 32 px patches at 224 px, a 2-layer text tower of
width 128; or any config of ``scoring_throughput.py``), saved as config JSON + safetensors.

Processes, each run ``--repeats`` times, alternating, in one invocation (medians reported):

- ``bare``: ``python fixed_costs.py --bare DIR``: what a careful script does with open_clip
  alone (no vlcheck import): load the model, decode + preprocess in threads, encode each unique
  image and text once in batches, print each set's pass rate.
- ``first``: ``pytest checks.yaml --vl-model SPEC --vl-report DIR`` with a fresh embedding
  cache (a first run: hashing, cache writes and the report files included).
- ``rerun``: the same command over the cache the last ``first`` filled (a cached re-run).
- ``empty``: ``pytest`` on an empty folder, the plugin installed (pytest's start-up + ours).
- ``bare-pytest``: ``pytest -p no:vlcheck`` on an empty folder (pytest's own start-up).

Every ``first`` and ``rerun`` must report the ``bare`` script's pass rates (checked).
With ``PYTHONDONTWRITEBYTECODE`` set, every process compiles this package from source (and
pytest rewrites the plugin's asserts) each time: ``--bytecode`` lets them write and reuse
``.pyc`` files, as an installed package has them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# SugarCrepe's seven sets and their sizes (7,511 examples in all).
SETS = {
    "add_att": 692,
    "add_obj": 2062,
    "replace_att": 788,
    "replace_obj": 1652,
    "replace_rel": 1406,
    "swap_att": 666,
    "swap_obj": 245,
}
VIT2 = {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 224, "layers": 2, "width": 128, "patch_size": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 128, "heads": 2, "layers": 2},
}
BATCH_SIZE = 256
LOAD_THREADS = 8
METHODS = ("bare", "first", "rerun", "empty", "bare-pytest")


# ---------------------------------------------------------------- the bare script


def bare_script(folder: Path) -> dict[str, float]:
    """Each set's pass rate, with open_clip, torch and PIL only (imported here, as a script
    would at its top)."""
    from concurrent.futures import ThreadPoolExecutor

    import open_clip
    import torch
    from PIL import Image

    open_clip.add_model_config(folder / "bench-clip.json")
    model, _, preprocess = open_clip.create_model_and_transforms(
        "bench-clip", pretrained=str(folder / "bench-clip.safetensors")
    )
    model.eval()
    tokenizer = open_clip.get_tokenizer("bench-clip")
    sets = {
        name: [json.loads(line) for line in (folder / f"{name}.jsonl").open(encoding="utf-8")]
        for name in SETS
        if (folder / f"{name}.jsonl").exists()
    }
    rows = [row for examples in sets.values() for row in examples]
    images = list(dict.fromkeys(row["image"] for row in rows))
    texts = list(dict.fromkeys(t for row in rows for t in (row["caption"], *row["negatives"])))

    def pixels(name: str) -> torch.Tensor:
        with Image.open(folder / name) as image:
            return preprocess(image.convert("RGB"))

    def unit(chunks: list[torch.Tensor]) -> torch.Tensor:
        vectors = torch.cat(chunks).double()
        return vectors / vectors.norm(dim=1, keepdim=True)

    with ThreadPoolExecutor(LOAD_THREADS) as pool, torch.inference_mode():
        decoded = pool.map(pixels, images)
        image_chunks = [
            model.encode_image(torch.stack([next(decoded) for _ in batch]))
            for batch in _batches(images)
        ]
        text_chunks = [model.encode_text(tokenizer(batch)) for batch in _batches(texts)]
    image_vec = dict(zip(images, unit(image_chunks), strict=True))
    text_vec = dict(zip(texts, unit(text_chunks), strict=True))
    rates = {}
    for name, examples in sets.items():
        correct = 0
        for row in examples:
            image = image_vec[row["image"]]
            true = float(torch.dot(image, text_vec[row["caption"]]).float())
            wrong = [float(torch.dot(image, text_vec[n]).float()) for n in row["negatives"]]
            correct += all(true > score for score in wrong)
        rates[name] = correct / len(examples)
    return rates


def _batches(items: list[str]) -> list[list[str]]:
    return [items[start : start + BATCH_SIZE] for start in range(0, len(items), BATCH_SIZE)]


# ---------------------------------------------------------------- the data


def write_sets(folder: Path, examples: int, images: int, seed: int) -> Path:
    """The JPEGs, one JSONL file per set (sizes in SugarCrepe's proportions) and
    ``checks.yaml`` with one caption test per set."""
    from scoring_throughput import write_data

    write_data(folder, examples, images, seed)  # the JPEGs and one examples.jsonl
    lines = (folder / "examples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "examples.jsonl").unlink()
    (folder / "checks.yaml").unlink()
    total, start, tests = sum(SETS.values()), 0, []
    for index, (name, size) in enumerate(SETS.items()):
        end = len(lines) if index == len(SETS) - 1 else start + len(lines) * size // total
        (folder / f"{name}.jsonl").write_text("".join(lines[start:end]), encoding="utf-8")
        capability = {"att": "attribute", "obj": "object", "rel": "relation"}[name[-3:]]
        tests.append(
            f"  - {{id: {name}, capability: {capability}/{name.split('_')[0]}, task: caption,"
            f" threshold: 0.0, examples: {name}.jsonl}}\n"
        )
        start = end
    checklist = folder / "checks.yaml"
    checklist.write_text("vlcheck: 1\ntests:\n" + "".join(tests), encoding="utf-8")
    return checklist


def write_model(folder: Path, arch: str, seed: int) -> str:
    """The random model as config JSON + safetensors; its ``open_clip:`` spec."""
    import scoring_throughput

    scoring_throughput.CONFIGS.setdefault("vit2", VIT2)
    return scoring_throughput.write_model(folder, arch, seed)


# ---------------------------------------------------------------- the processes


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


class Bench:
    """The commands of every method over one data folder, and their pass-rate checks."""

    def __init__(self, folder: Path, spec: str, bytecode: bool) -> None:
        self.folder = folder
        self.bytecode = bytecode
        self.spec = spec
        self.empty = folder / "empty"
        self.empty.mkdir()
        self.firsts = 0
        self.expected: dict[str, float] | None = None

    def command(self, method: str) -> tuple[list[str], Path, set[int]]:
        """The command line, its working folder and the exit statuses that mean it worked."""
        if method == "bare":
            return [sys.executable, __file__, "--bare", str(self.folder)], self.folder, {0}
        if method in ("empty", "bare-pytest"):
            off = ["-p", "no:vlcheck"] if method == "bare-pytest" else []
            return _pytest(*off), self.empty, {5}
        if method == "first":
            self.firsts += 1
        cache = self.folder / f"cache-{self.firsts}"
        run = [f"--vl-model={self.spec}", f"--vl-cache-dir={cache}", f"--vl-report={method}"]
        return _pytest("checks.yaml", *run), self.folder, {0}

    def check(self, method: str, stdout: str) -> None:
        """The pass rates must be the bare script's (which did the work without the plugin)."""
        if method == "bare":
            rates = json.loads(stdout.strip().splitlines()[-1])
        elif method in ("first", "rerun"):
            matrix = json.loads((self.folder / method / "matrix.json").read_text("utf-8"))
            rates = {row["test"]: row["pass_rate"] for row in matrix["results"]}
        else:
            return
        if self.expected is None:
            self.expected = rates
        elif rates != self.expected:
            raise SystemExit(f"{method}: pass rates {rates} differ from {self.expected}")

    def time(self, method: str) -> float:
        """Wall seconds of one process of ``method`` (fails loudly on an unexpected exit)."""
        args, cwd, ok = self.command(method)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(_python_path()))
        if self.bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        started = time.perf_counter()
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        if done.returncode not in ok:
            raise SystemExit(f"{method}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        self.check(method, done.stdout)
        return wall


def _python_path() -> list[str]:
    """This checkout first, so every process imports the same package as this script."""
    root = str(Path(__file__).resolve().parent.parent)
    return [root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]


def report(walls: dict[str, list[float]]) -> None:
    """Medians side by side, and the ratios and differences the issue asks for."""
    medians = {name: statistics.median(values) for name, values in walls.items()}
    for name, values in walls.items():
        runs = " ".join(f"{v:.2f}" for v in values)
        print(f"{name:<12} median {medians[name]:6.2f} s  (runs: {runs})")
    for top, bottom in (("first", "bare"), ("rerun", "empty"), ("empty", "bare-pytest")):
        if top in medians and bottom in medians:
            ratio, extra = medians[top] / medians[bottom], medians[top] - medians[bottom]
            print(f"{top}/{bottom}: {ratio:.2f}x ({extra:+.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=sum(SETS.values()))
    parser.add_argument("--images", type=int, default=1560)
    parser.add_argument("--arch", default="vit2", help="vit2, small, micro or an open_clip name")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bytecode", action="store_true", help="write and use .pyc files")
    parser.add_argument("--bare", type=Path, help=argparse.SUPPRESS)  # the bare process itself
    args = parser.parse_args()
    if args.bare is not None:
        print(json.dumps(bare_script(args.bare)))
        return
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory(prefix="vlcheck-fixed-") as tmp:
        folder = Path(tmp)
        write_sets(folder, args.examples, args.images, args.seed)
        bench = Bench(folder, write_model(folder, args.arch, args.seed), args.bytecode)
        print(f"{args.examples} examples in {len(SETS)} tests, {args.images} images, {args.arch}")
        walls: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(args.repeats):
            for name in methods:
                walls[name].append(bench.time(name))
        report(walls)


if __name__ == "__main__":
    main()
