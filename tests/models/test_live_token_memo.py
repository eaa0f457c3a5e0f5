"""A live model's token ids are kept across its calls (``models.live.token_memo``): the same
embeddings and truncation reports, each text tokenised once per tokenizer."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_vlcheck.models.batching import TruncationWarning
from pytest_vlcheck.models.live.scorer import live_scorer
from pytest_vlcheck.models.live.token_memo import TokenMemo, token_memo
from pytest_vlcheck.models.protocol import ModelOptions
from pytest_vlcheck.tiny import TINY_CONFIG

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

CPU = ModelOptions(device="cpu", batch_size=2)
LONG = " ".join(["a red circle left of a blue square"] * 6)  # over 32 tokens
TEXTS = ["a red circle", "two blue squares", LONG, "a red circle"]


class CountingTokenizer:
    """open_clip's tokenizer, counting the texts it is given (the empty padding probe too)."""

    def __init__(self) -> None:
        self.inner = open_clip.tokenizer.SimpleTokenizer(context_length=32)
        self.context_length = 32
        self.seen: list[str] = []

    def __call__(self, texts, context_length=None):
        self.seen.extend(texts)
        return self.inner(texts, context_length=context_length or 32)

    def encode(self, text):
        return self.inner.encode(text)


@pytest.fixture(scope="module")
def model():
    config = json.loads(Path(TINY_CONFIG).read_text(encoding="utf-8"))
    torch.manual_seed(0)
    return open_clip.CLIP(**config), open_clip.image_transform(96, is_train=False)


def _encode(model, tokenizer):
    network, preprocess = model
    scorer = live_scorer(network, preprocess=preprocess, tokenizer=tokenizer, options=CPU)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vectors = scorer.encode_texts(TEXTS)
    cut = [w for w in caught if issubclass(w.category, TruncationWarning)]
    return vectors, scorer.truncated_texts, cut


def test_a_second_call_tokenises_nothing_and_embeds_the_same(model):
    tokenizer = CountingTokenizer()
    first, first_cut, first_warnings = _encode(model, tokenizer)
    tokenised = len(tokenizer.seen)
    with torch.no_grad():  # an update: the texts are encoded again
        for parameter in model[0].parameters():
            parameter.mul_(1.001)
    second, second_cut, second_warnings = _encode(model, tokenizer)
    assert tokenised > 0 and len(tokenizer.seen) == tokenised  # nothing tokenised again
    unmemoised, _, _ = _encode(model, CountingTokenizer())  # a new tokenizer: a new memo
    np.testing.assert_array_equal(second, unmemoised)
    assert not np.array_equal(first, second)  # the weights changed, the ids did not
    # the cut text is reported to each call's scorer, and warned about in each
    assert first_cut == second_cut == {LONG}
    assert len(first_warnings) == len(second_warnings) == 1


def test_the_memo_keeps_at_most_its_limit_and_pushes_nothing_out():
    memo = TokenMemo(limit=2)
    rows = {text: torch.tensor([index]) for index, text in enumerate("abc")}
    memo.keep(rows, cut={"c"})
    assert list(memo.rows) == ["a", "b"] and memo.cut == set()
    assert memo.missing(["a", "c", "c", "d"]) == ["c", "d"]
    rows["a"].fill_(9)  # kept rows are copies: no batch's storage is held
    assert memo.rows["a"].item() == 0


class SlottedTokenizer:
    __slots__ = ()  # no __weakref__ slot: cannot be held weakly

    def __call__(self, texts):
        return open_clip.tokenize(texts)


def test_a_tokenizer_that_cannot_be_held_weakly_gets_no_memo():
    assert token_memo(SlottedTokenizer()) is None
    tokenizer = CountingTokenizer()
    assert token_memo(tokenizer) is token_memo(tokenizer)
