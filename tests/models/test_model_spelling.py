"""A misspelt ``--vl-model`` gets a "did you mean": an alias (``tinyy``) or a scheme
(``openclip:...``), as a usage error in one line."""

from __future__ import annotations

import pytest

from pytest_vlcheck.models.registry import ModelSpecError, parse_spec


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("tinyy", " (did you mean 'tiny'?)"),
        ("openclip:ViT-B-32@w.pt", " (did you mean 'open_clip:ViT-B-32@w.pt'?)"),
        ("scroes:s.jsonl", " (did you mean 'scores:s.jsonl'?)"),
        ("zzz", ""),
    ],
)
def test_a_misspelt_model_says_what_was_meant(text: str, hint: str) -> None:
    with pytest.raises(ModelSpecError) as caught:
        parse_spec(text)
    assert str(caught.value).startswith(f"unknown model '{text}'{hint}; expected one of clip, ")


def test_pytest_says_it_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", checks="vlcheck: 1\ntests: []\n")
    result = pytester.runpytest("--vl-model=tinyy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --vl-model: unknown model 'tinyy' (did you mean 'tiny'?);*"]
    )
