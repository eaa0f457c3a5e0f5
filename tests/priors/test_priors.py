"""Linguistic priors: prior metrics by hand, the causal-LM NLL against a direct computation."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.model_builders import byte_vocabulary

from pytest_vlcheck.metrics.priors import (
    group_prior_choices,
    hard_test_stats,
    mean_perplexity,
    perplexity_grid,
    prior_choices,
)
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.priors import (
    AveragePrior,
    PriorLoadError,
    PriorSpecError,
    load_priors,
    parse_prior_spec,
)

# ----------------------------------------------------------------------- pure metrics


def test_prior_choices_strict_ties_and_nan_are_wrong() -> None:
    true = np.array([10.0, 10.0, 10.0, np.nan, 3.0])
    others = np.array([[11.0, np.inf], [10.0, 12.0], [9.0, 20.0], [1.0, np.inf], [np.nan, 4.0]])
    assert prior_choices(true, others).tolist() == [True, False, False, False, False]


def test_hard_test_stats_caption_by_hand() -> None:
    # 10 examples; the prior is wrong on the last 4 (hard); the model passes 7 overall,
    # 1 of the hard ones.
    model = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 0], dtype=bool)
    prior = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    stats = hard_test_stats(model, prior)
    assert (stats.n, stats.n_hard, stats.hard_passed) == (10, 4, 1)
    assert stats.accuracy == pytest.approx(0.7)
    assert stats.prior_accuracy == pytest.approx(0.6)
    assert stats.hard_accuracy == pytest.approx(0.25)
    assert stats.gap == pytest.approx(0.45)
    # Wilson for 1/4 at z = 1.96, by hand: centre (0.25 + 0.4802) / 1.9604 = 0.3725,
    # half 1.96 * sqrt(0.046875 + 0.060025) / 1.9604 = 0.3268.
    assert stats.hard_ci_low == pytest.approx(0.0456, abs=1e-4)
    assert stats.hard_ci_high == pytest.approx(0.6994, abs=1e-4)


def test_hard_test_stats_without_hard_examples_has_no_hard_accuracy() -> None:
    stats = hard_test_stats(np.array([True, False]), np.array([True, True]))
    assert stats.n_hard == 0
    assert stats.hard_accuracy is None and stats.gap is None and stats.hard_ci_low is None
    with pytest.raises(ValueError, match="differ in size"):
        hard_test_stats(np.array([True]), np.array([True, False]))


def test_group_triplets_by_hand() -> None:
    # Two group examples; caption perplexities [N, 2]. Example 0: the prior prefers caption
    # 0, so triplet (image 0) is easy and triplet (image 1) is hard. Example 1: a tie, both
    # triplets hard.
    prior = group_prior_choices(np.array([[5.0, 8.0], [7.0, 7.0]]))
    assert prior.tolist() == [[True, False], [False, False]]
    # The model's per-triplet (text-criterion) correctness.
    model = np.array([[True, True], [False, True]])
    stats = hard_test_stats(model.reshape(-1), prior.reshape(-1))
    assert stats.prior_accuracy == pytest.approx(0.25)
    assert (stats.n, stats.n_hard, stats.hard_passed) == (4, 3, 2)
    assert stats.hard_accuracy == pytest.approx(2 / 3)
    assert stats.gap == pytest.approx(0.75 - 2 / 3)


def test_mean_perplexity_averages_perplexities_not_nlls() -> None:
    a, b = np.array([0.0, math.log(4.0)]), np.array([math.log(3.0), math.log(2.0)])
    assert mean_perplexity([a, b]).tolist() == pytest.approx([2.0, 3.0])
    # averaging the NLLs would give exp(mean) = sqrt(3) and sqrt(8) instead


def test_perplexity_grid_counts_by_hand() -> None:
    true = np.array([1.0, 2.0, 3.0, 4.0])
    negative = np.array([40.0, 30.0, 20.0, 10.0])
    correct = np.array([True, True, False, True])
    grid = perplexity_grid(true, negative, correct, bins=2)
    assert grid.true_edges == pytest.approx((1.0, 2.5, 4.0))
    assert grid.negative_edges == pytest.approx((10.0, 25.0, 40.0))
    # low true ppl (row 0) pairs with high negative ppl (column 1) here
    assert grid.n == ((0, 2), (2, 0))
    assert grid.passed == ((0, 2), (1, 0))


# ----------------------------------------------------------------------- specs


def test_parse_prior_spec() -> None:
    spec = parse_prior_spec("hf:/models/gpt2-xl/")
    assert (spec.name, spec.scheme, spec.body) == ("gpt2-xl", "hf", "/models/gpt2-xl/")
    assert parse_prior_spec("lm=py:mod:make").name == "lm"
    assert parse_prior_spec("py:mod:make").name == "make"
    with pytest.raises(PriorSpecError, match="expected hf:NAME_OR_DIR"):
        parse_prior_spec("gpt2")
    with pytest.raises(PriorSpecError, match="names nothing"):
        parse_prior_spec("hf:")


def test_py_priors_are_averaged_as_perplexities(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "lm_priors.py").write_text(
        "import math\n"
        "class Length:\n"
        "    def text_nll(self, texts):\n"
        "        return [math.log(len(t)) for t in texts]\n"
        "class Three:\n"
        "    def text_nll(self, texts):\n"
        "        return [math.log(3.0)] * len(texts)\n"
        "calls = []\n"
        "class Counting(Three):\n"
        "    def text_nll(self, texts):\n"
        "        calls.append(list(texts))\n"
        "        return super().text_nll(texts)\n"
        "def length():\n    return Length()\n"
        "def three():\n    return Three()\n"
        "def counting():\n    return Counting()\n"
        "def broken():\n    return object()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    prior = load_priors(["py:lm_priors:length", "py:lm_priors:counting"])
    assert prior.name == "length+counting"
    assert prior.perplexity(["abcde", "a", "abcde"]).tolist() == pytest.approx([4.0, 2.0, 4.0])
    assert sys.modules["lm_priors"].calls == [["a", "abcde"]]  # each unique text once
    with pytest.raises(PriorLoadError, match="has no text_nll"):
        load_priors(["py:lm_priors:broken"])
    with pytest.raises(PriorLoadError, match=r"'missing' in module 'lm_priors'.*does not exist"):
        load_priors(["py:lm_priors:missing"])


# ----------------------------------------------------------------------- hf causal LM


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer GPT-2 from a config with a byte-level character tokenizer, saved offline."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    dirpath = tmp_path_factory.mktemp("gpt2")
    vocab = byte_vocabulary(["<|endoftext|>"])
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            pre_tokenizers.Split("", "isolated"),
        ]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=64,
    )
    config = GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        n_positions=64,
        vocab_size=len(vocab),
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(dirpath)
    tokenizer.save_pretrained(dirpath)
    return dirpath


def _direct_nll(model_dir: Path, token_ids: list[int]) -> float:
    """One caption alone, no batch, no mask: BOS (id 0) + its tokens, mean -log p(token | prefix)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ids = torch.tensor([[0, *token_ids]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    logprobs = torch.log_softmax(logits[:-1].double(), dim=-1)
    return float(-logprobs[torch.arange(ids.shape[1] - 1), ids[0, 1:]].mean())


def test_causal_lm_nll_matches_direct_computation_and_ignores_padding(tiny_gpt2: Path) -> None:
    from pytest_vlcheck.priors.hf_lm import CausalLMPrior

    prior = CausalLMPrior(str(tiny_gpt2), ModelOptions(device="cpu", batch_size=8))
    assert prior.bos_id == 0
    short, long = "a red circle", "a big blue square to the left of a small star"
    tokens = [prior.tokenizer(t, add_special_tokens=False)["input_ids"] for t in (short, long)]
    assert [len(t) for t in tokens] == [len(short), len(long)]  # one token per character
    alone = [float(prior.text_nll([text])[0]) for text in (short, long)]
    direct = [_direct_nll(tiny_gpt2, ids) for ids in tokens]
    assert alone == pytest.approx(direct, abs=1e-5)
    batched = prior.text_nll([short, long, short])  # the short one padded to the long one
    assert batched.tolist() == pytest.approx([alone[0], alone[1], alone[0]], abs=1e-5)
    one_per_batch = CausalLMPrior(str(tiny_gpt2), ModelOptions(device="cpu", batch_size=1))
    assert one_per_batch.text_nll([long, short]).tolist() == pytest.approx(alone[::-1], abs=1e-5)


def test_hf_prior_through_the_spec_and_averaged(tiny_gpt2: Path) -> None:
    options = ModelOptions(device="cpu")
    one = load_priors([f"hf:{tiny_gpt2}"], options)
    two = load_priors([f"a=hf:{tiny_gpt2}", f"b=hf:{tiny_gpt2}"], options)
    texts = ["a red circle", "circle red a"]
    ppl = one.perplexity(texts)
    assert np.all(ppl > 1.0)
    assert two.perplexity(texts).tolist() == pytest.approx(ppl.tolist(), rel=1e-9)
    assert isinstance(two, AveragePrior) and two.name == "a+b"


# ----------------------------------------------------------------------- per-test prior block


def _checklist_test(tmp_path: Path, body: str):
    from pytest_vlcheck.checklist import load_checklist

    path = tmp_path / "c.yaml"
    path.write_text("vlcheck: 1\ntests:\n" + body)
    return load_checklist(path).tests[0]


def _lookup(table: dict[str, float]):
    return lambda texts: np.array([table[t] for t in texts])


def test_prior_block_caption_by_hand(tmp_path: Path) -> None:
    from pytest_vlcheck.priors.evaluation import prior_block
    from pytest_vlcheck.results import ExampleOutcome

    test = _checklist_test(
        tmp_path,
        "  - id: t\n    capability: a/b\n    task: caption\n    threshold: 0.5\n"
        "    hard_threshold: 0.5\n    examples:\n"
        + "".join(
            f"      - {{id: '{i}', image: i{i}.png, caption: c{i}, negatives: [n{i}, m{i}]}}\n"
            for i in range(4)
        ),
    )
    # The prior prefers the caption of 0 and 1; of 2 it prefers n2; of 3 c3 ties with m3.
    ppl = {"c0": 2, "n0": 5, "m0": 9, "c1": 3, "n1": 4, "m1": 4, "c2": 6, "n2": 5, "m2": 7}
    ppl |= {"c3": 4, "n3": 8, "m3": 4}
    # The model (scores of caption, n, m) is right on 0 and 2, wrong on 1 and 3.
    rows = {"0": [0.9, 0.1, 0.2], "1": [0.1, 0.9, 0.2], "2": [0.9, 0.1, 0.5], "3": [0.5, 0.5, 0]}
    outcomes = [ExampleOutcome(i, False, False, [row]) for i, row in rows.items()]
    block = prior_block(test, outcomes, _lookup(ppl), ["lm"]).to_json()
    assert (block["n"], block["n_hard"], block["hard_passed"]) == (4, 2, 1)
    assert block["accuracy"] == 0.5 and block["prior_accuracy"] == 0.5
    assert block["hard_accuracy"] == 0.5 and block["linguistic_gap"] == 0.0
    assert block["hard_threshold_met"] is True
    grid = block["grid"]
    assert sum(map(sum, grid["n"])) == 4 and sum(map(sum, grid["passed"])) == 2
    assert grid["true_edges"][0] == 2 and grid["true_edges"][-1] == 6
    assert grid["negative_edges"][0] == 4 and grid["negative_edges"][-1] == 5


def test_prior_block_group_triplets_by_hand(tmp_path: Path) -> None:
    from pytest_vlcheck.priors.evaluation import prior_block
    from pytest_vlcheck.results import ExampleOutcome

    test = _checklist_test(
        tmp_path,
        "  - id: g\n    capability: a/b\n    task: group\n    threshold: 0.5\n"
        "    hard_threshold: 0.9\n    examples:\n"
        "      - {id: x, images: [x0.png, x1.png], captions: [xa, xb]}\n"
        "      - {id: y, images: [y0.png, y1.png], captions: [ya, yb]}\n",
    )
    # x: the prior prefers xa (triplet 0 easy, 1 hard); y: a tie (both triplets hard).
    ppl = {"xa": 5.0, "xb": 8.0, "ya": 7.0, "yb": 7.0}
    # Model per triplet: x [right, right]; y [wrong (image 0 prefers yb), right].
    outcomes = [
        ExampleOutcome("x", True, False, [[0.9, 0.1], [0.2, 0.8]]),
        ExampleOutcome("y", False, False, [[0.1, 0.9], [0.2, 0.8]]),
    ]
    block = prior_block(test, outcomes, _lookup(ppl), ["lm"]).to_json()
    assert (block["n"], block["n_hard"], block["hard_passed"]) == (4, 3, 2)
    assert block["prior_accuracy"] == 0.25 and block["accuracy"] == 0.75
    assert block["hard_accuracy"] == pytest.approx(2 / 3)
    assert block["linguistic_gap"] == pytest.approx(0.75 - 2 / 3)
    assert block["hard_threshold_met"] is False


def test_prior_block_is_not_applicable_to_image_tests(tmp_path: Path) -> None:
    from pytest_vlcheck.priors.evaluation import junit_properties, prior_block
    from pytest_vlcheck.results import ExampleOutcome

    test = _checklist_test(
        tmp_path,
        "  - id: i\n    capability: a/b\n    task: image\n    threshold: 0.5\n    examples:\n"
        "      - {id: '0', text: t, image: a.png, distractors: [b.png]}\n",
    )
    block = prior_block(
        test, [ExampleOutcome("0", True, False, [[0.9], [0.1]])], _lookup({}), ["lm"]
    )
    assert block.applicable is False and "image test" in block.reason
    assert junit_properties(block) == [("vlcheck_prior", f"lm: {block.reason}")]


def test_prior_field_round_trips_and_is_validated() -> None:
    from pytest_vlcheck.results import CapabilityResult, ResultFormatError

    base = CapabilityResult(
        "f.yaml", "t", "a/b", "caption", "m", 2, 1, 0.5, 0.1, 0.9, 0.5, 0.5, "passed"
    )
    block = {
        "applicable": True,
        "priors": ["lm"],
        "n": 2,
        "accuracy": 0.5,
        "prior_accuracy": 0.5,
        "n_hard": 1,
        "hard_passed": 0,
        "hard_accuracy": 0.0,
        "hard_ci_low": 0.0,
        "hard_ci_high": 0.79,
        "linguistic_gap": 0.5,
        "hard_threshold": None,
        "hard_threshold_met": None,
        "grid": {"n": [[2]], "passed": [[1]]},
    }
    result = CapabilityResult.from_json({**base.to_json(), "prior": block})
    assert result.to_json()["prior"] == block
    assert CapabilityResult.from_json(result.to_json()) == result
    assert "prior" not in base.to_json()
    with pytest.raises(ResultFormatError, match=r"prior\.applicable"):
        CapabilityResult.from_json({**result.to_json(), "prior": {"applicable": "yes"}})
    with pytest.raises(ResultFormatError, match="n_hard"):
        CapabilityResult.from_json({**result.to_json(), "prior": {**block, "n_hard": 1.5}})


def test_grid_svg_puts_the_priors_surest_cell_top_left() -> None:
    from pytest_vlcheck.report.prior_view import grid_svg, prior_verdict_lines
    from pytest_vlcheck.results.blocks import PriorNotApplicable

    grid = {
        "true_edges": [1, 2, 3],
        "negative_edges": [10, 20, 30],
        "n": [[1, 4], [0, 2]],
        "passed": [[0, 3], [0, 1]],
    }
    svg = grid_svg(grid, "t")
    # row 0 (lowest true ppl) starts with column 1 (highest best-negative ppl): 3/4 first
    cells = [part.split("</text>")[0].rsplit(">", 1)[-1] for part in svg.split("<rect")[1:]]
    assert cells == ["75.0% (n=4)", "0.0% (n=1)", "50.0% (n=2)", "-"]
    lines = prior_verdict_lines(
        PriorNotApplicable((), "hard_threshold not applied: no --vl-prior", hard_threshold=0.5)
    )
    assert lines == ["linguistic prior (no prior): hard_threshold not applied: no --vl-prior"]
