"""vlcheck audit: blind baselines kept from the example they judge, data checks, the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vlcheck.audit import MIN_SLICE, TextChoice, audit_subject, audit_test
from pytest_vlcheck.audit.baselines import baseline_outcomes
from pytest_vlcheck.audit.checks import structural_findings
from pytest_vlcheck.audit.subject import AuditSubject
from pytest_vlcheck.checklist import load_checklist
from pytest_vlcheck.cli import main


def _choice(i: int, true: str, *others: str, images: tuple[str, ...] = (), tags=None) -> TextChoice:
    return TextChoice(str(i), i, true, others, images or (f"img{i}",), tags or {})


def _subject(choices: list[TextChoice], task: str = "caption") -> AuditSubject:
    return AuditSubject(Path("c.yaml"), 3, "t", task, tuple(choices))


def test_ngram_baselines_never_see_the_example_they_judge() -> None:
    # Every true caption has words of its own; fitted on all captions, the n-grams would
    # prefer each true caption (its words were seen). Held out, both candidates are unseen
    # and tie, and a tie is wrong.
    choices = [_choice(i, f"t{i}a t{i}b", f"n{i}a n{i}b") for i in range(12)]
    outcomes = baseline_outcomes(choices)
    assert not outcomes["unigram"].any() and not outcomes["bigram"].any()


def test_length_direction_is_chosen_on_the_other_examples() -> None:
    # A and B: the true caption is longer; C: shorter. Held out A, the rest is one each way
    # (a tie prefers longer): right. B likewise. Held out C, both others say longer: wrong.
    choices = [
        _choice(0, "a b c", "a b"),
        _choice(1, "x y z", "x y"),
        _choice(2, "p", "p q"),
    ]
    assert baseline_outcomes(choices)["length"].tolist() == [True, True, False]


def test_prior_outcome_is_strict() -> None:
    choices = [_choice(0, "good", "bad"), _choice(1, "same", "same too")]
    ppl = {"good": 2.0, "bad": 5.0, "same": 3.0, "same too": 3.0}
    outcomes = baseline_outcomes(choices, lambda texts: [ppl[t] for t in texts])
    assert outcomes["prior"].tolist() == [True, False]


def test_structural_findings() -> None:
    choices = [
        _choice(0, "A red circle.", "a red  circle"),  # identical once normalised
        _choice(1, "a red circle left of a star", "a star left of a red circle"),
        _choice(2, "a cat", "a dog", images=("x",)),
        _choice(3, "a cat", "a dog", images=("x",)),  # a duplicate of example 2
        _choice(4, "a cat", "a dog", images=("y", "y")),  # a distractor equal to the image
    ]
    choices += [_choice(i, f"w{i}", f"v{i}", tags={"s": "big"}) for i in range(5, 9)]
    findings = {f.kind: f for f in structural_findings(_subject(choices))}
    assert findings["identical_negative"].example_ids == ("0",)
    assert findings["reordered_negative"].example_ids == ("1",)
    assert not findings["reordered_negative"].flag
    assert findings["duplicate_examples"].example_ids == ("2", "3")
    assert findings["duplicate_distractor_images"].example_ids == ("4",)
    assert findings["small_test"].count == 9 < MIN_SLICE
    assert "s=big (n=4)" in findings["small_slices"].message


CHECKLIST = """\
vlcheck: 1
tests:
  - id: biased
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
{biased}
  - id: balanced
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
{balanced}
  - id: pairs
    capability: attribute/color
    task: group
    threshold: 0.5
    examples:
      - {{images: [g1.png, g2.png], captions: [a red cup, a blue cup]}}
"""
SHAPES = ["circle", "square", "star", "heart", "cross", "ring", "moon", "arrow"]
PRIOR = "def make():\n    return Red()\n\nclass Red:\n    def text_nll(self, texts):\n        return [0.0 if 'red' in t else 1.0 for t in texts]\n"


def _write_checklist(tmp_path: Path) -> Path:
    biased = [
        f"      - {{image: b{i}.png, caption: a red {SHAPES[i % 8]} {i}, negatives: [a blue {SHAPES[i % 8]} {i}]}}"
        for i in range(30)
    ]
    # mirrored: each caption is true once and a negative once, so no text rule beats chance
    balanced = []
    for i in range(15):
        shape = SHAPES[i % 8]
        balanced.append(
            f"      - {{image: r{i}.png, caption: a red {shape} {i}, negatives: [a blue {shape} {i}]}}"
        )
        balanced.append(
            f"      - {{image: u{i}.png, caption: a blue {shape} {i}, negatives: [a red {shape} {i}]}}"
        )
    path = tmp_path / "c.yaml"
    path.write_text(CHECKLIST.format(biased="\n".join(biased), balanced="\n".join(balanced)))
    (tmp_path / "red_prior.py").write_text(PRIOR)
    return path


def test_audit_flags_a_test_the_prior_solves_and_not_one_at_chance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_checklist(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(path), "--prior", "py:red_prior:make", "--strict"]) == 1
    out = capsys.readouterr().out.splitlines()
    biased = next(i for i, line in enumerate(out) if ": biased (" in line)
    assert out[biased].startswith(f"{path}:3: biased (caption, n=30)")
    assert out[biased].endswith("FLAGGED")
    assert any("blind baseline 'prior' passes 100.0% (30/30" in line for line in out)
    balanced = next(line for line in out if ": balanced (" in line)
    assert balanced.endswith(": ok")
    assert "chance 50.0%" in balanced
    pairs = next(line for line in out if ": pairs (" in line)
    assert "pairs (group, n=1)" in pairs  # one example, two triplets
    assert out[-1] == "vlcheck audit: 3 tests in 1 file, 2 flagged"
    assert main(["audit", str(path), "--prior", "py:red_prior:make"]) == 0


def test_audit_exit_two_on_a_bad_checklist_or_prior(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_checklist(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(path.read_text().replace("threshold: 0.5", "threshold: 5", 1))
    assert main(["audit", str(bad)]) == 2
    assert f"{bad}:6: 'threshold' is 5" in capsys.readouterr().err
    assert main(["audit", str(path), "--prior", "gpt2"]) == 2
    assert "expected hf:NAME_OR_DIR" in capsys.readouterr().err


def test_adapter_group_triplets_and_image_tests(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "vlcheck: 1\ntests:\n"
        "  - {id: g, capability: order/binding, task: group, threshold: 0.5, examples: "
        "[{images: [a.png, b.png], captions: [x y, y x]}]}\n"
        "  - {id: i, capability: object/existence, task: image, threshold: 0.5, examples: "
        "[{text: a cat, image: a.png, distractors: [a.png]}]}\n"
    )
    group, image = (audit_subject(t) for t in load_checklist(path).tests)
    assert [(c.true_text, c.other_texts) for c in group.choices] == [
        ("x y", ("y x",)),
        ("y x", ("x y",)),
    ]
    assert group.choices[0].image_keys == group.choices[1].image_keys[::-1]
    assert image.text_note.startswith("not applicable")
    audit = audit_test(image)
    assert audit.baselines == () and audit.chance is None
    assert "duplicate_distractor_images" in {f.kind for f in audit.findings}
