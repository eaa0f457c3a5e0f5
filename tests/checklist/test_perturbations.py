"""Word-level perturbations: seeded, always different from the input, words kept by shuffles."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pytest_vlcheck.checklist import perturbations as p

CAPTIONS = [
    "a fire hydrant on a city street",
    "a red circle to the left of a blue square",
    "the wood floor and the black bag",
    "group gathered to go snowmobiling.",
    "Two dogs play with a ball in the park",
]
COLORS = ["red", "blue", "green", "black"]
RELATIONS = ["to the left of", "to the right of", "above", "below", "inside", "on"]


def noun_adj_positions(caption: str) -> list[int]:
    return [i for i, w in enumerate(caption.split()) if p.is_noun_or_adjective(w)]


# --------------------------------------------------------------------------- shuffles


@pytest.mark.parametrize("kind", sorted(p.SHUFFLES))
@pytest.mark.parametrize("caption", CAPTIONS)
def test_shuffles_differ_keep_words_and_are_seeded(kind, caption):
    fn = p.SHUFFLES[kind]
    for seed in range(5):
        out = fn(caption, seed)
        assert out is not None and out != caption
        assert Counter(out.rstrip(".").split()) == Counter(caption.rstrip(".").split())
        assert out.endswith(".") == caption.endswith(".")
        assert fn(caption, seed) == out  # int seed: same result every time
        assert fn(caption, random.Random(seed)) == out  # same as a Random seeded alike


def test_noun_adjective_shuffle_moves_only_nouns_and_adjectives():
    caption = "a red circle to the left of a blue square"
    pos = noun_adj_positions(caption)
    assert [caption.split()[i] for i in pos] == ["red", "circle", "blue", "square"]
    for seed in range(10):
        out = p.shuffle_nouns_and_adjectives(caption, seed).split()
        for i, word in enumerate(caption.split()):
            if i not in pos:
                assert out[i] == word
        assert sorted(out[i] for i in pos) == ["blue", "circle", "red", "square"]


def test_all_but_shuffle_keeps_nouns_and_adjectives_in_place():
    caption = "a red circle to the left of a blue square"
    pos = noun_adj_positions(caption)
    for seed in range(10):
        out = p.shuffle_all_but_nouns_and_adjectives(caption, seed).split()
        assert [out[i] for i in pos] == ["red", "circle", "blue", "square"]


def test_trigram_shuffle_moves_whole_trigrams():
    caption = "a b c d e f g h"  # trigrams: (a b c) (d e f) (g h)
    for seed in range(10):
        out = p.shuffle_trigrams(caption, seed)
        chunks = {"a b c", "d e f", "g h"}
        assert any(out.startswith(c) for c in chunks)
        assert all(c in out for c in chunks)


def test_within_trigram_shuffle_keeps_trigram_membership():
    caption = "a b c d e f g h"
    for seed in range(10):
        out = p.shuffle_within_trigrams(caption, seed).split()
        assert set(out[0:3]) == {"a", "b", "c"}
        assert set(out[3:6]) == {"d", "e", "f"}
        assert set(out[6:8]) == {"g", "h"}


def test_shuffles_return_none_when_nothing_can_move():
    assert p.shuffle_trigrams("red circle", 0) is None  # one trigram
    assert p.shuffle_trigrams("a a a a a a", 0) is None  # identical trigrams
    assert p.shuffle_within_trigrams("a a a", 0) is None
    assert p.shuffle_nouns_and_adjectives("a circle", 0) is None  # one noun
    assert p.shuffle_nouns_and_adjectives("a circle and a circle", 0) is None
    assert p.shuffle_all_but_nouns_and_adjectives("red circle", 0) is None


def test_custom_lexicon_replaces_the_default():
    caption = "a zorp near a quib"
    # Default lexicon: unknown open-class words count as nouns.
    assert sorted(p.shuffle_nouns_and_adjectives(caption, 0).split()) == sorted(caption.split())
    out = p.shuffle_nouns_and_adjectives(caption, 0, nouns={"zorp", "quib"})
    assert out == "a quib near a zorp"
    assert p.shuffle_nouns_and_adjectives(caption, 0, nouns={"zorp"}) is None


def test_default_pos_lexicon():
    yes = ["circle", "Circles", "red", "striped", "hydrant", "zorp", "street,"]
    no = ["a", "the", "of", "above", "left", "is", "two", "running", "jumped", "42"]
    assert all(p.is_noun_or_adjective(w) for w in yes)
    assert not any(p.is_noun_or_adjective(w) for w in no)


# --------------------------------------------------------------------------- attributes


def test_replace_attribute():
    caption = "a red circle and a blue square"
    for seed in range(10):
        out = p.replace_attribute(caption, seed, COLORS)
        assert out != caption
        words, orig = out.split(), caption.split()
        changed = [i for i in range(len(orig)) if words[i] != orig[i]]
        assert len(changed) == 1 and orig[changed[0]] in ("red", "blue")
        assert words[changed[0]] in COLORS
    assert p.replace_attribute("a circle", 0, COLORS) is None  # no colour word
    assert p.replace_attribute("a red circle", 0, COLORS, choices=["red"]) is None
    assert p.replace_attribute("a red circle", 3, COLORS, choices=["green"]) == "a green circle"


def test_replace_attribute_keeps_capital_and_punctuation():
    assert p.replace_attribute("Red, circle.", 0, ["red"], choices=["blue"]) == "Blue, circle."


def test_swap_attributes():
    assert p.swap_attributes("a red circle and a blue square", 0, COLORS) == (
        "a blue circle and a red square"
    )
    assert p.swap_attributes("a red circle and a red square", 0, COLORS) is None
    assert p.swap_attributes("a red circle", 0, COLORS) is None
    three = "a red circle, a blue square and a green star"
    outs = {p.swap_attributes(three, s, COLORS) for s in range(30)}
    assert len(outs) == 3  # every pair of distinct colours can be the one swapped
    assert all(Counter(o.split()) == Counter(three.split()) and o != three for o in outs)


# --------------------------------------------------------------------------- relations


def test_replace_relation_multiword_and_opposites():
    caption = "a red circle is to the left of a blue square"
    for seed in range(10):
        out = p.replace_relation(caption, seed, RELATIONS)
        assert out != caption and out.startswith("a red circle is ")
        assert out.endswith(" a blue square")
    opposite = {"to the left of": ["to the right of"]}
    assert p.replace_relation(caption, 0, RELATIONS, opposite) == (
        "a red circle is to the right of a blue square"
    )
    assert p.replace_relation("a red circle", 0, RELATIONS) is None
    assert p.replace_relation("a cat on a mat", 0, ["on"]) is None  # nothing else to use


def test_swap_subject_object():
    assert p.swap_subject_object("the plate is on the table", ["on"]) == "the table is on the plate"
    assert p.swap_subject_object("The plate is on the table.", ["on"]) == (
        "The table is on the plate."
    )
    assert p.swap_subject_object("a red circle to the left of a blue square", RELATIONS) == (
        "a blue square to the left of a red circle"
    )
    assert p.swap_subject_object("a red circle", RELATIONS) is None
    assert p.swap_subject_object("above a square", RELATIONS) is None  # no subject
    assert p.swap_subject_object("a circle above a circle", RELATIONS) is None  # same both ways
